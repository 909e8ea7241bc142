-- quarantine_dead_letter_partition_hold locked a past day's partition in
-- SHARE mode (writes wait, reads go on) for retention to count what it
-- holds, and quarantine_dead_letter_partition_empty then locked it ACCESS
-- EXCLUSIVE to TRUNCATE it: a lock upgrade. A transaction that read the
-- day and then writes to it (ingest storing a late or redelivered dead
-- letter of that day: it reads the stored source keys first, then COPYs;
-- an operator's status change: it reads the row, then updates it) waited
-- for the SHARE lock while holding its read lock, which the upgrade waits
-- for: a deadlock, and PostgreSQL killed one of the two (40P01). Now the
-- day is locked once, as TRUNCATE locks it, before anything is counted:
-- a writer waits for the purge's commit instead, then finds the day
-- emptied (and its source keys kept), and _empty's own lock is one the
-- transaction already holds.
--
-- While the purge waits for that lock, every transaction that asks for
-- any lock on the day queues behind it (a page's read, ingest's look-up of
-- stored keys): the wait is bounded (2 s, SQLSTATE 55P03 after, as for
-- _drop), and the purge gives way (the day's dead letters go in batches of
-- rows; the day whole at a later pass) rather than hold them up longer.
CREATE OR REPLACE FUNCTION quarantine_dead_letter_partition_hold(p text) RETURNS date
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp SET lock_timeout = '2s' AS $$
DECLARE
    d date := quarantine_dead_letter_partition_day(p);
BEGIN
    EXECUTE format('LOCK TABLE public.%I IN ACCESS EXCLUSIVE MODE', p);
    RETURN d;
END $$;
COMMENT ON FUNCTION quarantine_dead_letter_partition_hold(text) IS 'Locks past day partition p as TRUNCATE does (ACCESS EXCLUSIVE) until the transaction ends, waiting at most 2 s (55P03): what retention counts in it is what quarantine_dead_letter_partition_empty removes, and no lock is upgraded in between (migration 0047).';
