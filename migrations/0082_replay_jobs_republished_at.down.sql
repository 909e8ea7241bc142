ALTER TABLE replay_jobs DROP COLUMN republished_at;
