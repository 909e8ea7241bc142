package views

import (
	"net/url"
	"time"
)

// PolicyStale is the note of a Policy page served by a console whose
// replay policy is not the active version: the table the page shows is
// its own, not the one every other process judges by.
type PolicyStale struct {
	// Version is this console's, Active the active version; both "" when
	// they are not shown (retention terms versions, to a viewer of some
	// tenants: the page then says only since when the active ones are).
	Version     string
	Active      string
	ActiveSince time.Time
	// ActivatedBy is the process (host-pid) that made it active, shown to
	// those who see every tenant, who run the console ("" for others).
	ActivatedBy string
	// FileUnreadable: this console's policy file could not be read again
	// (its log says why).
	FileUnreadable bool
	// NotRecorded: what the active version says was not recorded, so the
	// page shows no table in its place.
	NotRecorded bool
}

// PolicyViewing is the Policy page of one version that was active.
type PolicyViewing struct {
	Terms        bool // retention terms, not a replay policy version
	ActivatedAt  time.Time
	SupersededAt *time.Time // nil: the active version
	// ActivatedBy is the process that last made it active, shown to those
	// who see every tenant ("" for others).
	ActivatedBy string
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

// policyVersionURL is the Policy page of version v.
func policyVersionURL(v string) string { return "/policy?version=" + url.QueryEscape(v) }
