ALTER TABLE replay_jobs DROP COLUMN deferred_by;
