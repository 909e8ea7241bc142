ALTER TABLE replay_jobs DROP COLUMN handed_at;
