ALTER TABLE replay_jobs RESET (fillfactor);
COMMENT ON TABLE replay_jobs IS 'Outbox: one row per item of an approved request, written in the approval transaction.';
