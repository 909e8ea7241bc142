ALTER TABLE replay_jobs DROP COLUMN bytes;
