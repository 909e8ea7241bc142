// Package replaypolicy holds the replay-default policy table and the pure
// rules that say whether a dead letter may be replayed and what a replay
// needs.
//
// The table is a TOML file (the shipped one is dev/policy.toml, whose
// comments document the format). It maps item-type globs to one of five
// replay classes, first match wins, and gives every class its knobs:
// approvals, bulk and bulk cap, default and maximum rate, approval expiry and
// typed confirmation. An item type that no rule matches is manual, the
// strictest class. [Load] and [Parse] validate the file strictly and report
// every problem as "file: line N: where: what".
//
// Every rule that allows or refuses a replay is a pure function here; the
// replay service and workers (dlq/replay) only gather facts and call them:
//
//   - item eligibility: [JudgeItem] judges one dead letter at a step (a
//     draft, or a request being submitted, approved or shown) and returns a
//     [Verdict]: Go, Done (already replayed) or Block, with the check that
//     decided and a sentence for the operator;
//   - request requirements, from the set of item verdicts: [JudgeDraft] for
//     a selection becoming drafts (may the requester, bulk, bulk cap),
//     [JudgeRequest] for a request's own terms (reason, policy version,
//     count, rate, intent; the classes it is held to, [RequestUnion], and
//     its typed confirmation, [Table.Confirmation]), [Require] for its
//     approvals and typed confirmation, [SubmitVerdict] for what submitting
//     needs, and [Decide]
//     and [DecideItems], which compose them into a [Decision]: direct, one
//     approver, two approvers, refused or skipped, and whether it may run;
//   - who may act besides their roles: [MayApprove], [MayCancel],
//     [MayEditPayload], [MaySubmit], [Confirmed];
//   - execution-time validity: [JudgeRun] for a request whose jobs a worker
//     claimed and [JudgeJob] for each job, which names the costly facts it
//     needs ([Need]) before the worker gathers them.
//
// They do no I/O and read no clock: callers pass time in, so the same facts
// always give the same verdict. [Checks] names every check.
//
// Approvals bind to the request's intent hash and to the table's
// [Table.Version]: editing the intent or the policy voids them, which is why
// a request carries the version it was made under.
//
// The package touches no database, no NATS and no HTTP, and keeps no global
// state; asking for the facts the execution-time rules judge (the original
// principal's authority, the people's current rights, the ledger) is the
// replay worker's job.
package replaypolicy
