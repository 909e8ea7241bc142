package dlq

import "time"

// SetClock makes now the store's clock: a process whose clock differs
// from the database's.
func (s *Store) SetClock(now func() time.Time) { s.now = now }
