-- The keeper asks whether an open replay request names a dead letter of a
-- past day before it counts, keeps and audits the day for emptying
-- (dlq purgeDay): quarantine_dead_letter_partition_empty asks it last, under
-- the TRUNCATE's lock, after all that work, which a day an open request
-- held was given again every pass (review round 31).
GRANT EXECUTE ON FUNCTION quarantine_dead_letter_partition_busy(date) TO quarantine_runtime;
