REVOKE EXECUTE ON FUNCTION quarantine_dead_letter_partition_busy(date) FROM quarantine_runtime;
