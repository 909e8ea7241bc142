-- quarantine_dead_letter_partition_empty asked whether an open replay
-- request names a dead letter of the day, then truncated it. A draft or a
-- submit still being made when it asked was not seen (its rows were not
-- committed), and the TRUNCATE, which waits for every transaction that has
-- read the day, then removed what that request had just named. Now the
-- day is locked as the TRUNCATE locks it (ACCESS EXCLUSIVE) before the
-- question is asked: every transaction that read the day has ended, so
-- what it named is seen, and none reads the day again until the purge
-- ends (then its rows are gone, and it finds none to name).
CREATE OR REPLACE FUNCTION quarantine_dead_letter_partition_empty(p text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    d date := quarantine_dead_letter_partition_day(p);
BEGIN
    EXECUTE format('LOCK TABLE public.%I IN ACCESS EXCLUSIVE MODE', p);
    IF quarantine_dead_letter_partition_busy(d) THEN
        RAISE EXCEPTION '% holds dead letters of open replay requests: it is not emptied', p USING ERRCODE = '55000';
    END IF;
    EXECUTE format('TRUNCATE public.%I', p);
END $$;
