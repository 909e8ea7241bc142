-- Replay fixes after review round C of issue 12 (docs/replay.md): what
-- 0010 left of the worker before it, and the first publish of a job kept
-- for good.

-- ---------------------------------------------------------------------------
-- Jobs the worker before 0010 left unknown (no PubAck) or claimed (maybe
-- published before it stopped) were attempted, but 0010 gave them no first
-- attempt time: the worker took them for first attempts and published them
-- again blind. Their first attempt is dated the earliest it can have been
-- (their request's approval; their last change when that is unknown), so
-- the window rule retries them only while the broker's duplicate window
-- surely covers it, and otherwise hands them to a person
-- (needs_reconciliation).
-- ---------------------------------------------------------------------------

UPDATE replay_jobs j SET first_attempt_at = least(j.updated_at, coalesce(r.approved_at, j.updated_at))
FROM replay_requests r
WHERE r.id = j.request_id AND j.state IN ('unknown', 'claimed') AND j.first_attempt_at IS NULL;

-- ---------------------------------------------------------------------------
-- Jobs the worker before 0010 recorded "published" on a Duplicate PubAck
-- (the issue's false greens) became suppressed_duplicate, while their dead
-- letters stayed green "replayed" with a ledger row saying so, and could
-- not be replayed again. Whether the broker dropped them (the original was
-- inside its window) or kept an earlier publish of theirs nobody can know
-- now: a person decides (needs_reconciliation), the request is done with
-- problems, and the ledger rows are set aside (kept, no longer counted as
-- replays). The runtime role may only append to the ledger (0011); this is
-- the owner correcting rows that never proved a replay, once.
-- ---------------------------------------------------------------------------

CREATE TABLE replay_ledger_set_aside (
    LIKE replay_ledger INCLUDING DEFAULTS,
    set_aside_at timestamptz NOT NULL DEFAULT now(),
    why          text        NOT NULL
);
COMMENT ON TABLE replay_ledger_set_aside IS 'Ledger rows of replays that were never shown to have landed (a Duplicate PubAck recorded as published before 0010): kept for the record, not counted as replays.';
REVOKE INSERT, UPDATE, DELETE ON replay_ledger_set_aside FROM quarantine_runtime;

INSERT INTO replay_ledger_set_aside
SELECT l.*, now(), 'the broker answered Duplicate and the worker before 0010 recorded it as published: whether it landed is unknown'
FROM replay_ledger l JOIN replay_jobs j ON j.id = l.job_id
WHERE j.state = 'suppressed_duplicate' AND l.duplicate;

DELETE FROM replay_ledger WHERE job_id IN (SELECT job_id FROM replay_ledger_set_aside);

UPDATE replay_jobs SET state = 'needs_reconciliation', updated_at = now(),
    result = 'the broker answered Duplicate and the worker of that time recorded it as published; whether the broker dropped it or kept an earlier publish of it is unknown: '
          || 'check the target and say whether it was applied'
WHERE id IN (SELECT job_id FROM replay_ledger_set_aside);

-- The item holds its dead letter again until a person decides, unless
-- another request holds it now (one open request per dead letter).
UPDATE replay_items i SET held = true
FROM replay_ledger_set_aside s
WHERE i.request_id = s.request_id AND i.dead_letter_id = s.dead_letter_id AND NOT i.held
  AND NOT EXISTS (SELECT 1 FROM replay_items h WHERE h.dead_letter_id = i.dead_letter_id AND h.held);

-- Green only where the ledger still holds a replay of it (another request
-- replayed it since); discarded and resolved ones stay so.
UPDATE dead_letters d SET status = 'needs_reconciliation', version = d.version + 1, updated_at = now()
FROM replay_ledger_set_aside s
JOIN replay_items i ON i.request_id = s.request_id AND i.dead_letter_id = s.dead_letter_id AND i.held
WHERE d.id = s.dead_letter_id AND d.status = 'replayed'
  AND NOT EXISTS (SELECT 1 FROM replay_ledger l WHERE l.dead_letter_id = d.id);

UPDATE replay_requests SET status = 'done_with_problems', version = version + 1,
    status_reason = 'done with problems: the broker answered Duplicate for items recorded as published before 0010; they need reconciliation'
WHERE status = 'done' AND id IN (SELECT request_id FROM replay_ledger_set_aside);

-- ---------------------------------------------------------------------------
-- The first publish of a job, never reset: a message the broker keeps
-- under the job's id counts as the job's own only if it was stored at or
-- after it (and carries the approved payload), so a producer cannot plant
-- one by copying the replay's headers.
-- ---------------------------------------------------------------------------

ALTER TABLE replay_jobs ADD COLUMN first_published_at timestamptz;
COMMENT ON COLUMN replay_jobs.first_published_at IS 'When a worker was first about to publish the job (set with first_attempt_at, never reset): a message the broker keeps under its id is this job''s own only if stored at or after it, with the approved payload.';
