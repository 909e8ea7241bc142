ALTER TABLE replay_jobs DROP COLUMN waited_for;
