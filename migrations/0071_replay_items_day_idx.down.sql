DROP INDEX IF EXISTS replay_items_day_idx;
