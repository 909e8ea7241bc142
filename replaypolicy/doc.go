// Package replaypolicy holds the replay-default policy table and the pure
// decision function that says what a replay of one dead letter needs.
//
// The table is a TOML file (the shipped one is dev/policy.toml, whose
// comments document the format). It maps item-type globs to one of five
// replay classes, first match wins, and gives every class its knobs:
// approvals, bulk and bulk cap, default and maximum rate, approval expiry and
// typed confirmation. An item type that no rule matches is manual, the
// strictest class. [Load] and [Parse] validate the file strictly and report
// every problem as "file: line N: where: what".
//
// [Decide] takes the table, one item, the acting person, the replay request
// and the current time, and returns a [Decision]: direct, one approver, two
// approvers, refused or skipped, whether the replay may execute now, and a
// sentence for the operator. It does no I/O and reads no clock: callers pass
// time in, so the same inputs always give the same decision.
//
// Approvals bind to the request's intent hash and to the table's
// [Table.Version]: editing the intent or the policy voids them, which is why
// a request carries the version it was made under.
//
// The package touches no database, no NATS and no HTTP, and keeps no global
// state; the execution-time checks (original principal's authority, the
// approver's current rights) are the replay worker's job.
package replaypolicy
