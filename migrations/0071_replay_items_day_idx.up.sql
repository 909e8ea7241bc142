-- quarantine_dead_letter_partition_busy(d) asks whether an open replay
-- request names a dead letter of day d. replay_items had no index by
-- dead_lettered_at alone (only after dead_letter_id), so every ask read
-- the whole table, which only grows (items of closed requests stay). The
-- keeper asks it three times per emptied day, the last under the day's
-- ACCESS EXCLUSIVE lock (quarantine_dead_letter_partition_empty), during
-- which every read across days (the dashboard, the lists) waits: with 3
-- million items about 0.5 s a time (review round 35). With this index an
-- ask reads that day's items only.
--
-- A plain CREATE INDEX, in the migration's transaction: it holds inserts
-- into replay_items (drafts and submits wait) for one read of the table,
-- a second or two per million items. CONCURRENTLY would need the file run
-- outside a transaction, and waits for every older snapshot, among them a
-- second `console migrate` waiting for the migrations' lock: the two
-- would deadlock.
DROP INDEX IF EXISTS replay_items_day_idx; -- one a first draft of this migration left invalid (CONCURRENTLY), on a development database
CREATE INDEX replay_items_day_idx ON replay_items (dead_lettered_at);
COMMENT ON INDEX replay_items_day_idx IS 'Items by the day of their dead letter, for quarantine_dead_letter_partition_busy (the keeper''s question before it empties a day).';
