package views

import "time"

// IngestLagView is how far behind ingest is, for the dashboard. The zero
// value (not Known) shows nothing: this process does not ingest, or has
// not checked yet.
type IngestLagView struct {
	Known bool
	// Waiting are the dead letters in the streams not yet stored; Oldest
	// is when JetStream stored the oldest of them (zero: none waits).
	Waiting int64
	Oldest  time.Time
	// Behind says the oldest has waited past the dashboard's threshold.
	Behind bool
	// Stalled says why ingest counts as stalled; empty while it moves.
	Stalled []string
	// Limits says which stream limit the dead letters not yet stored near
	// (JetStream discards past it); empty when none does.
	Limits    []string
	CheckedAt time.Time
	// Scoped says the reader does not read every tenant: Waiting and
	// Oldest are zero (one stream holds every tenant's dead letters), and
	// the line says only up to date, behind or stalled.
	Scoped bool
}
