CREATE OR REPLACE FUNCTION quarantine_dead_letter_partition_drop(p text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    d date := quarantine_dead_letter_partition_day(p);
    rows_left boolean;
BEGIN
    PERFORM set_config('lock_timeout', '2s', true);
    LOCK TABLE public.dead_letters IN ACCESS EXCLUSIVE MODE;
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM public.%I)', p) INTO rows_left;
    IF rows_left THEN
        RETURN false;
    END IF;
    EXECUTE format('DROP TABLE public.%I', p);
    RETURN true;
END $$;
COMMENT ON FUNCTION quarantine_dead_letter_partition_drop(text) IS NULL;
