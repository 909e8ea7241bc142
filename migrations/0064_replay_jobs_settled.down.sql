ALTER TABLE replay_jobs DROP COLUMN settled;
