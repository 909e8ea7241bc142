ALTER TABLE dead_letter_groups DROP COLUMN arrived;
COMMENT ON COLUMN group_triage.snooze_base IS 'Dead letters of the group stored in this tenant (sum of dead_letter_groups.n) when it was snoozed.';
COMMENT ON COLUMN group_triage.snooze_grow_by IS 'The snooze ends once the group holds this many more than snooze_base (NULL: no growth limit).';
