// Package audit is the append-only, tamper-evident audit log: who did what,
// when, why, to which object, with what result.
//
// Every state change and every denied attempt is written with Append in the
// caller's own transaction, so the entry commits or rolls back with the change
// it describes. AppendFunc opens a transaction of its own, for events that
// change nothing else (a login, a denial).
//
// # The chain
//
// Entries are numbered 1, 2, 3, ... without gaps (seq). Appends are serialised
// by a transaction-scoped advisory lock; the lock is held until the caller's
// transaction ends, so callers append late in their transaction. Each entry
// stores the hash of its predecessor (prev_hash, NULL for seq 1) and its own
// hash: SHA-256 over its seq, prev_hash and the digest of a random nonce
// and a canonical encoding of all its fields (hash version 3; entries
// written before it hash the fields and prev_hash directly; see hash.go for
// the exact bytes). An export gives the digest of an entry it leaves out,
// so its hash is recomputed without its content, and not its nonce, so the
// digest confirms no guess of that content. Verify walks the chain and names the
// first entry that was edited, removed or inserted.
//
// Before and After are hashed in a canonical JSON form: PostgreSQL's jsonb text
// (keys sorted, numbers normalised) with insignificant whitespace removed. That
// is also the form List, Get and the exports return, so an exported entry can
// be re-hashed without the database.
//
// The table rejects UPDATE, DELETE and TRUNCATE with triggers (see
// migrations/0002_audit_log.up.sql, which also gives the REVOKE an operator
// runs). The chain cannot tell a removed tail from a log that was never
// longer, and the table owner or a superuser can rewrite the whole chain with
// fresh hashes; recording the head hash elsewhere (Verify's Result, the export
// trailers) is what anchors it.
//
// Reads (List, Get, ForObject, the exports) take the tenants a viewer may see
// and answer not_found (a quarantine.Error) rather than with another tenant's entry.
package audit
