CREATE OR REPLACE FUNCTION quarantine_dead_letter_partition_empty(p text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    d date := quarantine_dead_letter_partition_day(p);
BEGIN
    EXECUTE format('LOCK TABLE public.%I IN SHARE MODE', p);
    IF quarantine_dead_letter_partition_busy(d) THEN
        RAISE EXCEPTION '% holds dead letters of open replay requests: it is not emptied', p USING ERRCODE = '55000';
    END IF;
    EXECUTE format('TRUNCATE public.%I', p);
END $$;
