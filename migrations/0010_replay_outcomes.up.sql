-- Replay outcomes that tell the truth (docs/replay.md, "Outcomes"): every
-- item ends as what happened to it, the broker's duplicate window is
-- honoured, the rate is kept in the database, unknown outcomes end in a
-- person's hands, error classes and fixes count, and replay loops are
-- linked.

-- ---------------------------------------------------------------------------
-- Jobs: the item outcomes.
-- ---------------------------------------------------------------------------

-- A job's state is its item's outcome once it ends: replayed (the broker
-- stored our publish), suppressed_duplicate (the broker kept dropping it as
-- a duplicate of a message that is not ours), blocked (why: the result),
-- needs_reconciliation (an outcome nobody can know: a person decides),
-- skipped (why), cancelled. While it runs it is pending, claimed, deferred
-- (inside the target stream's duplicate window, until not_before) or
-- unknown (no PubAck; retried under the same message id while the window
-- covers the first attempt).
ALTER TABLE replay_jobs DROP CONSTRAINT replay_jobs_state_check;
UPDATE replay_jobs SET state = CASE WHEN duplicate THEN 'suppressed_duplicate' ELSE 'replayed' END WHERE state = 'published';
UPDATE replay_jobs SET state = 'blocked' WHERE state = 'failed';
ALTER TABLE replay_jobs ADD CONSTRAINT replay_jobs_state_check CHECK (state IN
    ('pending', 'claimed', 'deferred', 'unknown', 'replayed', 'suppressed_duplicate', 'skipped', 'blocked',
     'needs_reconciliation', 'cancelled'));
ALTER TABLE replay_jobs
    ADD COLUMN first_attempt_at timestamptz,
    ADD COLUMN deferrals integer NOT NULL DEFAULT 0;
DROP INDEX replay_jobs_ready_idx;
CREATE INDEX replay_jobs_ready_idx ON replay_jobs (not_before, id) WHERE state IN ('pending', 'claimed', 'deferred', 'unknown');
COMMENT ON COLUMN replay_jobs.state IS 'pending, claimed, deferred (until not_before: inside the duplicate window), unknown (no PubAck: retried under the same Nats-Msg-Id while the window covers first_attempt_at); then the item outcome: replayed, suppressed_duplicate, skipped, blocked, needs_reconciliation, cancelled.';
COMMENT ON COLUMN replay_jobs.first_attempt_at IS 'When a worker was about to publish it for the first time (set before the publish, in the slot reservation): a publish may have landed since. NULL: never attempted, or the broker answered that another message holds its id (deferred).';
COMMENT ON COLUMN replay_jobs.deferrals IS 'How often the broker answered that a message that is not ours holds the id; after 3 the job ends suppressed_duplicate.';
COMMENT ON COLUMN replay_jobs.duplicate IS 'The PubAck said Duplicate and the message the broker kept was our own earlier publish of this job.';

-- ---------------------------------------------------------------------------
-- Requests: done only when every item was replayed or skipped; the rate's
-- next free slot; the reconciliation note of unknown_effect items.
-- ---------------------------------------------------------------------------

ALTER TABLE replay_requests DROP CONSTRAINT replay_requests_status_check;
ALTER TABLE replay_requests ADD CONSTRAINT replay_requests_status_check CHECK (status IN
    ('draft', 'pending_approval', 'approved', 'running', 'done', 'done_with_problems', 'rejected', 'cancelled', 'void'));
ALTER TABLE replay_requests
    ADD COLUMN rate_next timestamptz,
    ADD COLUMN reconciliation_note text NOT NULL DEFAULT '';
COMMENT ON COLUMN replay_requests.rate_next IS 'The next publish slot of the request: workers reserve slots here (1/rate apart, never before now) just before publishing, so the rate holds across workers and restarts.';
COMMENT ON COLUMN replay_requests.reconciliation_note IS 'What the requester checked and the evidence, required when an item''s error class needs reconciliation first (unknown_effect); part of the intent hash.';
-- Finished requests with items that did not replay (as the rules count them
-- now; the outcome of each item is its job's state).
UPDATE replay_requests r SET status = 'done_with_problems'
WHERE status = 'done' AND (EXISTS (SELECT 1 FROM replay_jobs j WHERE j.request_id = r.id AND j.state NOT IN ('replayed', 'skipped'))
                          OR EXISTS (SELECT 1 FROM replay_items i WHERE i.request_id = r.id AND i.verdict = 'block'));

-- ---------------------------------------------------------------------------
-- Dead letters: a status for the ones whose replay needs a person, and the
-- replay loop (Dlq-Replay-Of).
-- ---------------------------------------------------------------------------

ALTER TABLE dead_letters DROP CONSTRAINT dead_letters_status_check;
ALTER TABLE dead_letters ADD CONSTRAINT dead_letters_status_check CHECK (status IN
    ('quarantined', 'replay_requested', 'replaying', 'replayed', 'replay_failed', 'needs_reconciliation', 'discarded', 'resolved'));
CREATE OR REPLACE FUNCTION dead_letter_unresolved(status text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN status IN ('quarantined', 'replay_requested', 'replaying', 'replay_failed', 'needs_reconciliation');
DROP INDEX dead_letters_unresolved_age_idx;
CREATE INDEX dead_letters_unresolved_age_idx ON dead_letters (tenant, dead_lettered_at)
    WHERE status IN ('quarantined', 'replay_requested', 'replaying', 'replay_failed', 'needs_reconciliation');

ALTER TABLE dead_letters
    ADD COLUMN replay_of  bigint,
    ADD COLUMN generation integer NOT NULL DEFAULT 0;
CREATE INDEX dead_letters_replay_of_idx ON dead_letters (replay_of) WHERE replay_of IS NOT NULL;
COMMENT ON COLUMN dead_letters.replay_of IS 'The dead letter whose replay this one is (Dlq-Replay-Of), when that header named a dead letter of the same tenant with the same message id; otherwise NULL and the header is flagged. No foreign key: the table may be partitioned by time.';
COMMENT ON COLUMN dead_letters.generation IS 'How many replays of its message came back as dead letters before this one: 0 for a first failure, the origin''s generation + 1 for a linked one. Past the policy''s generation_limit only manual may replay it.';

-- ---------------------------------------------------------------------------
-- Fix markers: "fixed at <time>: <version or ticket>", per tenant and item
-- type, or one error group of it. schema_invalid and permanent dead letters
-- replay only after a fix recorded later than they were dead-lettered.
-- ---------------------------------------------------------------------------

CREATE TABLE fix_markers (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant             text        NOT NULL,
    item_type          text        NOT NULL,
    fingerprint        text        NOT NULL DEFAULT '',
    fixed_at           timestamptz NOT NULL,
    fix_ref            text        NOT NULL,
    note               text        NOT NULL DEFAULT '',
    created_by_issuer  text        NOT NULL,
    created_by_subject text        NOT NULL,
    created_by_email   text        NOT NULL DEFAULT '',
    created_at         timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT fix_markers_ref_check CHECK (fix_ref <> '' AND octet_length(fix_ref) <= 200 AND octet_length(note) <= 2000),
    CONSTRAINT fix_markers_bounds_check CHECK (octet_length(tenant) <= 128 AND octet_length(item_type) <= 256 AND octet_length(fingerprint) <= 64)
);
CREATE INDEX fix_markers_lookup_idx ON fix_markers (tenant, item_type, fixed_at DESC);
COMMENT ON TABLE fix_markers IS 'Audited statements by an on-call that a fix was deployed: append-only (the runtime role may not change or delete one).';
COMMENT ON COLUMN fix_markers.fingerprint IS 'The error group the fix is for; empty: every dead letter of the item type.';
COMMENT ON COLUMN fix_markers.fixed_at IS 'When the fix was in place: dead letters dead-lettered before it may replay (error classes schema_invalid and permanent).';
REVOKE UPDATE, DELETE ON fix_markers FROM quarantine_runtime;

-- Who may do the new things (docs/access.md): stop anyone's request in an
-- emergency (approvers and admins), settle an outcome nobody can know
-- (approvers), record a fix (on-call).
INSERT INTO casbin_rule (ptype, v0, v1, v2, v3) VALUES
    ('p', 'approver', '*', 'replay:*',   'stop'),
    ('p', 'admin',    '*', 'replay:*',   'stop'),
    ('p', 'approver', '*', 'replay:*',   'reconcile'),
    ('p', 'oncall',   '*', 'deadletter', 'fix');
