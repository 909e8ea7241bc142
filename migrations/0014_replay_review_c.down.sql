ALTER TABLE replay_jobs DROP COLUMN first_published_at;

-- The worker before 0010 retried "unknown" jobs forever: what waits for a
-- person is blocked for it (the result says a person must decide), and
-- its dead letter failed, and let go of.
UPDATE replay_items i SET held = false
FROM replay_jobs j WHERE j.request_id = i.request_id AND j.dead_letter_id = i.dead_letter_id AND j.state = 'needs_reconciliation' AND i.held;
UPDATE replay_jobs SET state = 'blocked', updated_at = now(),
    result = 'needs reconciliation: whether the publish landed is unknown, and a person must check the target and decide; it is not published again by itself. ' || result
WHERE state = 'needs_reconciliation';
UPDATE dead_letters SET status = 'replay_failed', version = version + 1, updated_at = now() WHERE status = 'needs_reconciliation';

INSERT INTO replay_ledger (job_id, request_id, dead_letter_id, tenant, class, msg_id, operation_id, subject, stream, seq, duplicate, published_at)
SELECT job_id, request_id, dead_letter_id, tenant, class, msg_id, operation_id, subject, stream, seq, duplicate, published_at
FROM replay_ledger_set_aside
ON CONFLICT DO NOTHING;
DROP TABLE replay_ledger_set_aside;
