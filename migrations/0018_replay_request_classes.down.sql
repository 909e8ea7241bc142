ALTER TABLE replay_requests DROP COLUMN classes;
