DROP INDEX replay_ledger_operation_key;
DROP INDEX replay_ledger_dedupe_key;
ALTER TABLE replay_ledger DROP COLUMN operation_key, DROP COLUMN dedupe_key;
CREATE UNIQUE INDEX replay_ledger_dedupe_key ON replay_ledger (tenant, quarantine_key(msg_id)) WHERE class = 'dedupe';
CREATE UNIQUE INDEX replay_ledger_operation_key ON replay_ledger (tenant, quarantine_key(operation_id)) WHERE class = 'same_operation';
DROP TABLE replay_policy_active;
DROP INDEX replay_jobs_unsettled_idx;
