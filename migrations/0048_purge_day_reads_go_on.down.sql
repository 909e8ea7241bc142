CREATE OR REPLACE FUNCTION quarantine_dead_letter_partition_hold(p text) RETURNS date
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp SET lock_timeout = '2s' AS $$
DECLARE
    d date := quarantine_dead_letter_partition_day(p);
BEGIN
    EXECUTE format('LOCK TABLE public.%I IN ACCESS EXCLUSIVE MODE', p);
    RETURN d;
END $$;
COMMENT ON FUNCTION quarantine_dead_letter_partition_hold(text) IS 'Locks past day partition p as TRUNCATE does (ACCESS EXCLUSIVE) until the transaction ends, waiting at most 2 s (55P03): what retention counts in it is what quarantine_dead_letter_partition_empty removes, and no lock is upgraded in between (migration 0047).';

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
COMMENT ON FUNCTION quarantine_dead_letter_partition_empty(text) IS NULL;
