-- The replay ledger is what "already replayed" means (docs/replay.md): the
-- console only ever appends to it (dlq/replay, record.go) and reads it. The
-- runtime role loses UPDATE and DELETE, which migration 0006 granted with
-- the other replay tables, so a compromised console process cannot make a
-- replayed identity look fresh. Retention removes dead letters, never the
-- ledger.
REVOKE UPDATE, DELETE ON replay_ledger FROM quarantine_runtime;
COMMENT ON TABLE replay_ledger IS 'Append-only for the runtime role (SELECT, INSERT): one row per published replay job; the dedupe and same_operation keys decide what was already replayed.';
