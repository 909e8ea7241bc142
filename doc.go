// Package quarantine holds the vocabulary every other package speaks: the
// coded Error that services return and the web layer turns into a status
// and a sentence, the Actor who does things, and the RequestMeta an audit
// row records about where an action came from.
//
// It imports nothing of the project, so every package may use it. The
// implementations live beside it: dlq (dead letters and ingest),
// dlq/replay (replay requests and workers), replaypolicy (the pure replay
// rules), authz (sign-in and permissions), audit (the audit log), web and
// views (the console).
package quarantine
