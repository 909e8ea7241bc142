-- A job a person settled "not applied, republish" is published again
-- under the same message id, past its stream's duplicate window: a second
-- send of its dead letter's event. The replay ledger keeps one row per job,
-- and the replay chain took the job's row for the one replay a dead letter
-- that came back from its first publish returned from: a returned dead
-- letter stored before the republish was then replayed as new, and the
-- event took effect twice (review round 44). The job now keeps when a
-- person last decided to publish it again (NULL: never), which counts as
-- a second replay sent of its dead letter (sentReplays): a dead letter
-- that came back from it is left for a person, never replayed on a guess.
ALTER TABLE replay_jobs ADD COLUMN republished_at timestamptz;
COMMENT ON COLUMN replay_jobs.republished_at IS 'When a person last settled the job "not applied, republish" (by the database clock); NULL: never. The replay chain counts it as a second replay sent of its dead letter.';
-- Jobs republished before this release: the audit log holds each such
-- decision (replay.item.reconciled, choice republish), and nothing else
-- does.
UPDATE replay_jobs j SET republished_at = a.at
FROM (SELECT (after->>'request')::bigint AS request_id, object_id::bigint AS dead_letter_id, max(at) AS at
      FROM audit_log
      WHERE action = 'replay.item.reconciled' AND object_type = 'dead_letter' AND after->>'choice' = 'republish'
        AND object_id ~ '^[0-9]{1,18}$' AND after->>'request' ~ '^[0-9]{1,18}$'
      GROUP BY 1, 2) a
WHERE j.request_id = a.request_id AND j.dead_letter_id = a.dead_letter_id;
