ALTER TABLE sessions DROP COLUMN idle_from;
