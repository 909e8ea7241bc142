-- quarantine_dead_letter_partition_drop (migration 0016) dropped an empty
-- past day after LOCK TABLE dead_letters IN ACCESS EXCLUSIVE MODE with a
-- lock_timeout of 2 s: a request that stands in the parent's lock queue
-- (and, without ONLY, in every partition's). Behind any transaction that
-- reads dead_letters and takes its time (a report, an export, an
-- operator's psql session), it waited the full 2 s, and while it waited
-- every new statement on dead_letters (ingest's COPY of today's dead
-- letters, every page) queued behind it: at every keeper pass, for each
-- empty past day there was to drop.
--
-- Now it asks as quarantine_dead_letter_partition_empty asks for its day
-- (migration 0048): without standing in the queue (NOWAIT), for the parent
-- alone (ONLY) and then for the day, again every 10 ms for at most 300 ms,
-- and gives way (55P03) when it does not get both: the keeper leaves the
-- day for its next pass (dropEmpty). Both are asked in one subtransaction,
-- so a day it cannot have gives back the parent's lock at once. Holding
-- both, DROP TABLE needs no lock anyone else can hold (a statement reaches
-- a partition's indexes only through its table); its lock_timeout of 100 ms
-- bounds what it might still wait for, with the parent locked, should that
-- ever be wrong (55P03 again: the same give-way).
CREATE OR REPLACE FUNCTION quarantine_dead_letter_partition_drop(p text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp SET lock_timeout = '100ms' AS $$
DECLARE
    d date := quarantine_dead_letter_partition_day(p); -- refuses anything but a day's partition
    deadline timestamptz := clock_timestamp() + interval '300 milliseconds';
    rows_left boolean;
BEGIN
    LOOP
        BEGIN
            LOCK TABLE ONLY public.dead_letters IN ACCESS EXCLUSIVE MODE NOWAIT;
            EXECUTE format('LOCK TABLE public.%I IN ACCESS EXCLUSIVE MODE NOWAIT', p);
            EXIT;
        EXCEPTION WHEN lock_not_available THEN
            IF clock_timestamp() >= deadline THEN
                RAISE EXCEPTION 'dead_letters or % stayed in use for 300 ms: % (%) is not dropped now', p, p, d
                    USING ERRCODE = 'lock_not_available';
            END IF;
        END;
        PERFORM pg_sleep(0.01);
    END LOOP;
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM public.%I)', p) INTO rows_left;
    IF rows_left THEN
        RETURN false;
    END IF;
    EXECUTE format('DROP TABLE public.%I', p);
    RETURN true;
END $$;
COMMENT ON FUNCTION quarantine_dead_letter_partition_drop(text) IS 'Drops past day partition p when it holds no row, and reports whether it did (false: rows arrived since). Takes ACCESS EXCLUSIVE on dead_letters alone (ONLY) and on p without queueing for them (NOWAIT, again every 10 ms for at most 300 ms; 55P03 then, and the caller tries at its next pass), so that no statement on dead_letters ever waits behind a queued drop (migration 0051).';
