-- Back to migrations 0016's maker and 0048's emptying.
CREATE OR REPLACE FUNCTION quarantine_dead_letter_partition_make(day date) RETURNS boolean
    LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    part text := quarantine_dead_letter_partition_name(day);
BEGIN
    IF EXISTS (SELECT 1 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
               WHERE i.inhparent = 'public.dead_letters'::regclass AND c.relname = part) THEN
        RETURN false;
    END IF;
    EXECUTE format('CREATE TABLE public.%I (LIKE public.dead_letters INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMPRESSION)', part);
    -- Index-only scans need the visibility map: vacuum after 1% new rows
    -- (as the unpartitioned table was, migration 0004).
    EXECUTE format('ALTER TABLE public.%I SET (autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_vacuum_insert_threshold = 10000)', part);
    EXECUTE format('ALTER TABLE public.dead_letters ATTACH PARTITION public.%I FOR VALUES FROM (%L) TO (%L)', part,
        day::timestamp AT TIME ZONE 'UTC', (day + 1)::timestamp AT TIME ZONE 'UTC');
    RETURN true;
END $$;
CREATE OR REPLACE FUNCTION quarantine_dead_letter_partition_empty(p text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    d date := quarantine_dead_letter_partition_day(p);
    rel oid := format('public.%I', p)::regclass;
    deadline timestamptz := clock_timestamp() + interval '300 milliseconds';
BEGIN
    LOOP
        BEGIN
            EXECUTE format('LOCK TABLE public.%I IN ACCESS EXCLUSIVE MODE NOWAIT', p);
            EXIT;
        EXCEPTION WHEN lock_not_available THEN
            -- A writer of the day waits for this transaction's SHARE lock
            -- and may hold a read lock the TRUNCATE needs gone: give way
            -- to it rather than keep it waiting.
            IF EXISTS (SELECT 1 FROM pg_locks l
                       WHERE l.locktype = 'relation' AND l.relation = rel AND NOT l.granted
                         AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())) THEN
                RAISE EXCEPTION '% has a writer waiting: it is not emptied now', p USING ERRCODE = 'lock_not_available';
            END IF;
            IF clock_timestamp() >= deadline THEN
                RAISE EXCEPTION '% stayed in use for 300 ms: it is not emptied now', p USING ERRCODE = 'lock_not_available';
            END IF;
        END;
        PERFORM pg_sleep(0.01);
    END LOOP;
    -- Every transaction that read the day has ended (migration 0023): what
    -- a draft named is seen.
    IF quarantine_dead_letter_partition_busy(d) THEN
        RAISE EXCEPTION '% holds dead letters of open replay requests: it is not emptied', p USING ERRCODE = '55000';
    END IF;
    EXECUTE format('TRUNCATE public.%I', p);
END $$;
COMMENT ON FUNCTION quarantine_dead_letter_partition_empty(text) IS 'Empties past day partition p (TRUNCATE) unless an open replay request names a dead letter of it (55000). Takes ACCESS EXCLUSIVE without queueing for it (NOWAIT, again every 10 ms for at most 300 ms; 55P03 at once when a writer of the day waits), so that it never deadlocks with a writer of the day and never holds up readers while it waits (migration 0048).';
DROP FUNCTION quarantine_dead_letter_partition_bounded(text);
