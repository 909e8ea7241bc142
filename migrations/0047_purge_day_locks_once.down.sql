CREATE OR REPLACE FUNCTION quarantine_dead_letter_partition_hold(p text) RETURNS date
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    d date := quarantine_dead_letter_partition_day(p);
BEGIN
    EXECUTE format('LOCK TABLE public.%I IN SHARE MODE', p);
    RETURN d;
END $$;
COMMENT ON FUNCTION quarantine_dead_letter_partition_hold(text) IS NULL;
