-- Back to one row per identity under each key (migration 0017): the later
-- rows of an identity stay in the ledger (every reader finds them by
-- message id, or through the items by operation id, whatever their
-- flags) but lose the flag, so that the unique indexes can be made again.
UPDATE replay_ledger l SET dedupe_key = false
WHERE l.dedupe_key AND EXISTS (SELECT 1 FROM replay_ledger e
    WHERE e.dedupe_key AND e.tenant = l.tenant AND quarantine_key(e.msg_id) = quarantine_key(l.msg_id)
      AND (e.published_at, e.job_id) < (l.published_at, l.job_id));
UPDATE replay_ledger l SET operation_key = false
WHERE l.operation_key AND EXISTS (SELECT 1 FROM replay_ledger e
    WHERE e.operation_key AND e.tenant = l.tenant AND quarantine_key(e.operation_id) = quarantine_key(l.operation_id)
      AND (e.published_at, e.job_id) < (l.published_at, l.job_id));
CREATE UNIQUE INDEX replay_ledger_dedupe_key ON replay_ledger (tenant, quarantine_key(msg_id)) WHERE dedupe_key;
CREATE UNIQUE INDEX replay_ledger_operation_key ON replay_ledger (tenant, quarantine_key(operation_id)) WHERE operation_key;
COMMENT ON COLUMN replay_ledger.dedupe_key IS 'The item was replayed under dedupe rules (its class or one of its union): its message id is replayed once per tenant.';
COMMENT ON COLUMN replay_ledger.operation_key IS 'The item was replayed under same_operation rules: its operation id is replayed once per tenant.';
COMMENT ON TABLE replay_ledger IS 'Append-only for the runtime role (SELECT, INSERT): one row per published replay job; the dedupe and same_operation keys decide what was already replayed.';
