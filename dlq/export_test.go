package dlq

// SetTextWindowRows makes a text search's first window hold about n dead
// letters, so that a test's few rows span many windows.
func (s *Store) SetTextWindowRows(n int64) { s.windowRows = n }

// SelectReplayOrigins is the statement linkReplays reads claims' origins
// with, for plan tests.
const SelectReplayOrigins = selectReplayOrigins
