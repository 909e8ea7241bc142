-- Migration 0047 made quarantine_dead_letter_partition_hold lock a past
-- day ACCESS EXCLUSIVE before retention counted it, so that no lock was
-- upgraded (a writer that had read the day met the purge's SHARE to
-- ACCESS EXCLUSIVE upgrade in a deadlock). But the lock was then held
-- through the count, the kept keys and origins and the TRUNCATE, and every
-- read of dead_letters that the planner cannot prune to other days (the
-- dead letters page's default view, the dashboard) locks every partition:
-- each one waited for the whole purge of a day it does not show (3 s for
-- 200k rows, growing with the day).
--
-- Now _hold takes SHARE again (writes of the day wait, reads go on; the
-- wait for it stays bounded by 2 s, 55P03), and _empty takes ACCESS
-- EXCLUSIVE without standing in the lock's queue: it asks with NOWAIT,
-- again every 10 ms for at most 300 ms, and gives way (55P03, the caller
-- rolls the whole run back: nothing counted, kept or subtracted stays)
-- when it does not get it, at once when some transaction waits for a lock
-- on the day. Such a transaction waits for the purge's SHARE lock: a
-- writer of the day, which may hold a read lock on it (ingest reads the
-- day's stored source keys before its COPY; an operator's status change
-- reads its row before it updates it), so the purge would never get its
-- lock before that writer ends. A purge that waited in the queue instead
-- would be one half of a deadlock with such a writer, and PostgreSQL finds
-- that at once, not after deadlock_timeout (the waiter that arrives second
-- is killed when it asks: the purge when the writer waits already, the
-- writer when it asks while the purge waits), so no lock_timeout, however
-- short, prevents the 40P01; a queued request would also hold up every new
-- reader of the day behind it. Asking with NOWAIT, the purge never waits
-- for a lock on the day while it holds one, so it is never part of a
-- deadlock on it, whatever deadlock_timeout is set to, and readers wait
-- only from the TRUNCATE to the commit (the audit rows and the checkpoint).
-- The price: a day that readers never leave for 300 ms is not emptied
-- whole; its dead letters go in batches of rows, as for any day that gives
-- way.
CREATE OR REPLACE FUNCTION quarantine_dead_letter_partition_hold(p text) RETURNS date
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp SET lock_timeout = '2s' AS $$
DECLARE
    d date := quarantine_dead_letter_partition_day(p);
BEGIN
    EXECUTE format('LOCK TABLE public.%I IN SHARE MODE', p);
    RETURN d;
END $$;
COMMENT ON FUNCTION quarantine_dead_letter_partition_hold(text) IS 'Locks past day partition p against writes (SHARE: reads go on) until the transaction ends, waiting at most 2 s (55P03): what retention counts in it is what quarantine_dead_letter_partition_empty removes (migration 0048).';

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
