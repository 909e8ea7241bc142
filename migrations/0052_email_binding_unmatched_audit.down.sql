-- The audit log is append-only and chained: the entries 0052 appended
-- stay (deleting them would break the chain after them).
SELECT 1;
