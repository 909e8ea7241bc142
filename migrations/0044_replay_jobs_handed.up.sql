-- Whether a replay job's message was ever handed to the NATS client
-- (dlq/replay: the chain exception's first replay of an origin, and the
-- replays ingest links a returning dead letter to). first_published_at
-- cannot say it: the publish gate sets it when it reserves a slot, before
-- the last checks and the send, and never resets it, so a job reserved and
-- then cancelled before anything was sent reads as one sent and later
-- settled "not applied" (cancelled too). handed_at is set by the same gate,
-- in the same committed statement, before the send (so a worker that dies
-- after it leaves it set: "may have been sent"), and cleared by the
-- worker's record, under the job's fence, only for a job its own claim
-- marked and never handed to the client.
ALTER TABLE replay_jobs ADD COLUMN handed_at timestamptz;
COMMENT ON COLUMN replay_jobs.handed_at IS 'When a worker was first about to hand the job''s message to the NATS client (set by the publish gate before the send, never reset once a claim handed it): NULL means nothing of the job was ever sent. A claim that marked it and sent nothing (a cancel, a stop, a release before the slot) clears it when it records. Jobs before migration 0044 that may have been sent (a gate marked them, or their state says a publish may have landed) have their first_published_at, else first_attempt_at, else their last change.';

-- Jobs from before: every one that may have been sent counts as handed
-- (what the chain exception and linkReplays took for sent until now); a
-- reserved job cancelled unsent cannot be told apart any more and stays
-- counted, as it was.
UPDATE replay_jobs SET handed_at = coalesce(first_published_at, first_attempt_at, updated_at)
WHERE first_published_at IS NOT NULL OR first_attempt_at IS NOT NULL
   OR state IN ('replayed', 'suppressed_duplicate', 'unknown', 'needs_reconciliation');
