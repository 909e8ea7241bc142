// Package replay re-publishes dead letters: a selection frozen into draft
// requests (selection.go), submitted with a reason (submit.go), approved,
// rejected (approve.go), cancelled or edited (cancel.go) and read
// (read.go) by the Service; executed by Workers (worker.go and the files
// it names), which publish to the original subject under the original
// message id (subjects.go) and keep a ledger of what they published.
//
// Every rule that allows or refuses a replay is a pure function of
// replaypolicy: the service and the workers gather facts (from PostgreSQL,
// the subject allowlist, the people's rights, the owning service's answer)
// and call them, and act on the verdict. State changes are guarded UPDATEs
// whose rows affected are checked, each with its audit rows in the same
// transaction. Errors are quarantine.Errors wrapped with the operation.
//
// It knows nothing about HTTP or HTML.
package replay
