package views

import (
	"fmt"
	"strings"
	"time"
)

// RetentionView is how long dead letters are kept and what retention last
// did, for the policy page and the dashboard.
type RetentionView struct {
	// Statuses head the columns of every line's Keep.
	Statuses []string
	// Lines are the retention rules, first match wins, then the defaults
	// (tenant "*", item type ">").
	Lines []RetentionRow
	// LastPurgeAt is when retention last removed dead letters of the
	// viewer's tenants (zero: never); LastPurgeRows how many.
	LastPurgeAt   time.Time
	LastPurgeRows int64
	// NotOwn: the lines are the active terms, which another process made
	// active, not this console's own (whose keeper removes nothing).
	// NotRecorded: what the active terms say is not recorded (no Lines).
	NotOwn, NotRecorded bool
}

// RetentionRow is one retention rule: who it covers and how long each
// status is kept ("30 days", "never").
type RetentionRow struct {
	Tenant, ItemType string
	Keep             []string
}

// StorageView is where dead letters are stored, for the dashboard: the
// day partitions of the table and the DLQ stream's use of its limits.
type StorageView struct {
	Partitions        int
	FirstDay, LastDay time.Time
	// OthersHidden says the figures are left out (zero) for a reader of
	// some tenants only: the partitions and the stream hold every
	// tenant's dead letters.
	OthersHidden bool
	// Stream is the DLQ stream as ingest last checked it (zero: this
	// process does not ingest, or has not checked yet).
	Stream StreamView
}

// StreamView is the DLQ stream's size and age against its limits.
type StreamView struct {
	Known    bool
	Name     string
	Bytes    int64
	MaxBytes int64 // 0: no limit
	FirstAt  time.Time
	MaxAge   time.Duration // 0: no limit
	// Shortest is the shortest period retention keeps a dead letter (0:
	// none, all kept for good). A stream that keeps its messages longer
	// keeps payloads the console removed: the view says so (KeepsLonger).
	Shortest time.Duration
	// Setting is DLQ_MAX_AGE (0: none): the console raises the stream's
	// age limit back up to it, so lowering the limit by hand alone does
	// nothing but raise an alert.
	Setting time.Duration
}

// KeepsLonger says, when the stream keeps its messages longer than
// retention keeps some dead letters, that their payloads outlive their
// removal; "" otherwise.
func (s StreamView) KeepsLonger() string {
	if s.Shortest <= 0 || (s.MaxAge > 0 && s.MaxAge <= s.Shortest) {
		return ""
	}
	limit := "no age limit"
	if s.MaxAge > 0 {
		limit = "an age limit of " + Duration(s.MaxAge)
	}
	hours := fmt.Sprintf("%dh", int64(s.Shortest/time.Hour))
	text := "The stream has " + limit + ", and retention removes some dead letters after " + Duration(s.Shortest) +
		": their messages, payloads and all, stay in the stream after the console removed them. Give the stream an age limit of at most " +
		hours + " (it needs a message only until it is stored, but JetStream discards older ones stored or not: keep it longer than an outage of the console or PostgreSQL you must ride out). "
	if s.Setting > s.Shortest {
		// The console raises a lower limit back up to the setting: the
		// setting first, or the edit is undone and alerted on.
		text += "First set DLQ_MAX_AGE of every console to at most " + hours + " and restart them (it is " + fmt.Sprintf("%dh", int64(s.Setting/time.Hour)) +
			" now, and a console raises the stream's limit back up to its own), then, once ingest has caught up (runbook: DeadLetterStreamNearLimit, step 4): "
	}
	return text + "nats stream edit " + s.Name + " --max-age " + hours +
		" (the console sets DLQ_MAX_AGE only on a stream it makes; it never lowers an existing stream's limit)."
}

// anyOf shows the wildcard of a rule as "" (the table says "any").
func anyOf(s string) string {
	if s == "*" || s == ">" {
		return ""
	}
	return s
}

// retentionSummary is the defaults line in words: "closed 30 days,
// unresolved 90 days" style, per status, and how many rules differ.
func retentionSummary(r RetentionView) string {
	if len(r.Lines) == 0 {
		return ""
	}
	def := r.Lines[len(r.Lines)-1]
	var parts []string
	for i, st := range r.Statuses {
		if i < len(def.Keep) {
			parts = append(parts, Label(st)+" "+def.Keep[i])
		}
	}
	out := strings.Join(parts, ", ")
	if n := len(r.Lines) - 1; n == 1 {
		out += "; 1 rule for some tenants or item types"
	} else if n > 1 {
		out += fmt.Sprintf("; %d rules for some tenants or item types", n)
	}
	return out
}

// streamSummary is the DLQ stream's size and oldest message against its
// limits.
func streamSummary(s StreamView, now time.Time) string {
	size := Bytes(s.Bytes)
	if s.MaxBytes > 0 {
		size += " of " + Bytes(s.MaxBytes)
	} else {
		size += ", no size limit"
	}
	age := "oldest message " + ageText(s.FirstAt, now)
	if s.FirstAt.IsZero() {
		age = "empty"
	}
	if s.MaxAge > 0 {
		age += " (age limit " + Duration(s.MaxAge) + ")"
	} else {
		age += ", no age limit"
	}
	return s.Name + ": " + size + "; " + age
}
