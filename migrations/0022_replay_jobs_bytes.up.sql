-- A claim takes jobs up to a budget of payload and header bytes
-- (WorkerConfig.BatchBytes). It used to size each job it considered by
-- reading its item and its dead letter (two index probes per job, about
-- 64 ms of a claim of 2,048), though neither changes once the job exists:
-- an item's payload and headers are frozen before its request is approved
-- (an edit needs a request not yet approved), and the jobs are written in
-- the approval. So the approval writes each job's size with it.
ALTER TABLE replay_jobs ADD COLUMN bytes bigint NOT NULL DEFAULT 0;
-- The jobs a claim may still take (and the ones a person may send again)
-- get their size now; ended jobs are never claimed again.
UPDATE replay_jobs j SET bytes = coalesce(octet_length(i.payload), d.payload_size, 0) + octet_length(i.headers::text)
FROM replay_items i LEFT JOIN dead_letters d ON d.id = i.dead_letter_id AND d.dead_lettered_at = i.dead_lettered_at
WHERE i.request_id = j.request_id AND i.dead_letter_id = j.dead_letter_id
  AND j.state IN ('pending', 'claimed', 'deferred', 'unknown', 'needs_reconciliation');
COMMENT ON COLUMN replay_jobs.bytes IS 'What publishing the job reads: its payload (the edited one, else the dead letter''s) and its headers as text, in bytes; written with the job at approval, when both are frozen. A claim sums it against its byte budget.';
