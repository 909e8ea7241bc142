-- Replay fixes after issue 12 (docs/replay.md): jobs that may have been
-- published wait for a person and count as possibly replayed, the active
-- policy version lives in the database, and the ledger keys every
-- identity an item's classes ask for.

-- Jobs that wait for a person (needs_reconciliation) are few; the worker
-- asks, for every dedupe or same_operation job, whether one of another
-- request holds the same identity (possibly replayed).
CREATE INDEX replay_jobs_unsettled_idx ON replay_jobs (request_id, dead_letter_id) WHERE state = 'needs_reconciliation';
