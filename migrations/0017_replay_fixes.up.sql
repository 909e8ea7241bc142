-- Replay fixes after issue 12 (docs/replay.md): jobs that may have been
-- published wait for a person and count as possibly replayed, the active
-- policy version lives in the database, and the ledger keys every
-- identity an item's classes ask for.

-- Jobs that wait for a person (needs_reconciliation) are few; the worker
-- asks, for every dedupe or same_operation job, whether one of another
-- request holds the same identity (possibly replayed).
CREATE INDEX replay_jobs_unsettled_idx ON replay_jobs (request_id, dead_letter_id) WHERE state = 'needs_reconciliation';

-- The replay policy version every process judges by. A process that
-- starts with a policy file makes its version the active one (the last
-- deploy wins, audited as replay.policy_activated); a process whose table
-- is not the active one reloads its file, and until it has the active
-- version its workers claim nothing and its console submits and approves
-- nothing, so no one judges with stale rules or blocks items approved
-- under the new ones.
CREATE TABLE replay_policy_active (
    singleton    boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    version      text        NOT NULL,
    name         text        NOT NULL DEFAULT '',
    activated_at timestamptz NOT NULL DEFAULT now(),
    activated_by text        NOT NULL DEFAULT ''
);
COMMENT ON TABLE replay_policy_active IS 'One row: the replay policy version in force (replaypolicy.Table.Version), which file and process made it so, and when.';
REVOKE DELETE, TRUNCATE ON replay_policy_active FROM quarantine_runtime;

-- The ledger keys each identity an item's classes ask for, not only its
-- request's class: an item that is dedupe by its item type and
-- same_operation by its subject (a union of constraints) is kept unique
-- by its message id and by its operation id. Existing rows key what
-- their class did.
ALTER TABLE replay_ledger
    ADD COLUMN dedupe_key    boolean NOT NULL DEFAULT false,
    ADD COLUMN operation_key boolean NOT NULL DEFAULT false;
UPDATE replay_ledger SET dedupe_key = (class = 'dedupe'), operation_key = (class = 'same_operation');
DROP INDEX replay_ledger_dedupe_key;
DROP INDEX replay_ledger_operation_key;
CREATE UNIQUE INDEX replay_ledger_dedupe_key ON replay_ledger (tenant, quarantine_key(msg_id)) WHERE dedupe_key;
CREATE UNIQUE INDEX replay_ledger_operation_key ON replay_ledger (tenant, quarantine_key(operation_id)) WHERE operation_key;
COMMENT ON COLUMN replay_ledger.dedupe_key IS 'The item was replayed under dedupe rules (its class or one of its union): its message id is replayed once per tenant.';
COMMENT ON COLUMN replay_ledger.operation_key IS 'The item was replayed under same_operation rules: its operation id is replayed once per tenant.';
