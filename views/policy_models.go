package views

import "time"

// PolicyStale is the note of a Policy page served by a console whose
// replay policy is not the active version: the table the page shows is
// its own, not the one every other process judges by.
type PolicyStale struct {
	Version     string // this console's
	Active      string // the active version
	ActiveSince time.Time
	// ActivatedBy is the process (host-pid) that made it active, shown to
	// those who see every tenant, who run the console ("" for others).
	ActivatedBy string
	// FileUnreadable: this console's policy file could not be read again
	// (its log says why).
	FileUnreadable bool
}

// PolicyRollback is the note of a Policy page while a rollback allowance
// waits (console policy rollback).
type PolicyRollback struct {
	Version   string // the version allowed back
	ExpiresAt time.Time
	// AllowedBy is the operator who allowed it, shown to those who see
	// every tenant ("" for others).
	AllowedBy string
}
