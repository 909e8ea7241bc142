-- A snooze "until N more arrive" counted the group's stored size (the sum
-- of dead_letter_groups.n, which retention's deletes lower) against its
-- size when snoozed: every dead letter retention removed meanwhile kept the
-- group hidden one arrival longer. arrived only goes up: the fold adds the
-- dead letters that arrived (dlq/counters.go), and nothing subtracts. A
-- snooze now counts from it. The backfill is n: what is stored is all that
-- is known to have arrived, and snooze_base of a snooze taken before this
-- migration was that size.
ALTER TABLE dead_letter_groups ADD COLUMN arrived bigint NOT NULL DEFAULT 0;
UPDATE dead_letter_groups SET arrived = greatest(n, 0);
COMMENT ON COLUMN dead_letter_groups.arrived IS 'Dead letters of the group that ever arrived in this tenant and item type (counted by the fold; deletes and status changes leave it alone). Snoozes "until N more arrive" count from it.';
COMMENT ON COLUMN group_triage.snooze_base IS 'Dead letters of the group that had arrived in this tenant (sum of dead_letter_groups.arrived) when it was snoozed.';
COMMENT ON COLUMN group_triage.snooze_grow_by IS 'The snooze ends once this many more dead letters of the group have arrived in this tenant than snooze_base (NULL: no growth limit).';
