-- quarantine_dead_letter_partition_make (migration 0016) wrote a day's
-- bounds into its ATTACH statement as text (%L of a timestamptz), printed
-- in the calling session's DateStyle and TimeZone, and ATTACH read that
-- text back. Under DateStyle 'SQL, DMY' and TimeZone 'Asia/Kolkata',
-- midnight UTC printed as "... 05:30:00 IST", which PostgreSQL reads as
-- Israel time: the day's partition held [D 03:30, D+1 03:30) UTC, where
-- everything else takes a day partition for [D, D+1) by its name.
-- Retention counted and kept the name's day and then emptied the whole
-- table (TRUNCATE): a dead letter from 00:00-03:30 of the next day went
-- with it, named by an open request or not, unaudited, its key not kept;
-- and a change of those settings left hours of a day with no partition,
-- whose dead letters were then never stored (review round 39; round 36
-- fixed the reading side only). A DATABASE_URL parameter or ALTER ROLE /
-- ALTER DATABASE ... SET datestyle is enough.
--
-- Now the bounds are written as ISO text with an explicit +00 offset,
-- which reads back the same under any DateStyle and TimeZone. And a day
-- partition is emptied whole only when its bound is its name's day
-- (quarantine_dead_letter_partition_bounded): one made before this
-- migration under such settings, or attached by hand with other bounds,
-- is refused (42P17, naming it), the keeper's pass fails with it, and its
-- dead letters go as rows, each under its own retention (docs/runbook.md,
-- "A day partition's bounds are not its day").

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
    EXECUTE format('ALTER TABLE public.%I SET (autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_vacuum_insert_threshold = 10000)', part);
    -- Bounds as text of their own, not of the session: to_char of a date
    -- depends on no setting, and an ISO timestamp with a numeric offset
    -- reads back the same under every DateStyle and TimeZone.
    EXECUTE format('ALTER TABLE public.dead_letters ATTACH PARTITION public.%I FOR VALUES FROM (%L) TO (%L)', part,
        to_char(day, 'YYYY-MM-DD') || ' 00:00:00+00', to_char(day + 1, 'YYYY-MM-DD') || ' 00:00:00+00');
    RETURN true;
END $$;
REVOKE ALL ON FUNCTION quarantine_dead_letter_partition_make(date) FROM PUBLIC;

-- quarantine_dead_letter_partition_bounded reports whether day partition p
-- holds exactly its name's UTC day: false for a partition of dead_letters
-- named for no day, NULL for a name that is none of its partitions. The
-- bound is printed under fixed settings (the function's own), so the
-- comparison is of text that does not depend on the caller's session.
-- It reads the catalog only: the console's role may ask it (the runbook
-- does, "A day partition's bounds are not its day").
CREATE FUNCTION quarantine_dead_letter_partition_bounded(p text) RETURNS boolean
    LANGUAGE plpgsql STABLE SET search_path = pg_catalog, public, pg_temp SET "DateStyle" = 'ISO, YMD' SET "TimeZone" = 'UTC' AS $$
DECLARE
    bound text;
    d date;
BEGIN
    SELECT pg_get_expr(c.relpartbound, c.oid) INTO bound
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'public.dead_letters'::regclass AND c.relname = p AND c.relnamespace = 'public'::regnamespace;
    IF bound IS NULL THEN
        RETURN NULL;
    END IF;
    IF p !~ '^dead_letters_p[0-9]{8}$' THEN
        RETURN false;
    END IF;
    BEGIN
        d := to_date(substr(p, 15), 'YYYYMMDD');
    EXCEPTION WHEN OTHERS THEN
        RETURN false; -- dead_letters_p20240231: no day
    END;
    RETURN quarantine_dead_letter_partition_name(d) = p
       AND bound = format('FOR VALUES FROM (%L) TO (%L)',
                          to_char(d, 'YYYY-MM-DD') || ' 00:00:00+00', to_char(d + 1, 'YYYY-MM-DD') || ' 00:00:00+00');
END $$;
REVOKE ALL ON FUNCTION quarantine_dead_letter_partition_bounded(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quarantine_dead_letter_partition_bounded(text) TO quarantine_runtime;
COMMENT ON FUNCTION quarantine_dead_letter_partition_bounded(text) IS 'Whether day partition p holds exactly its name''s UTC day, [D 00:00, D+1 00:00) UTC, whatever the caller''s DateStyle and TimeZone; NULL when p is no partition of dead_letters (migration 0074).';

-- Partitions made off their days (above): empty ones (a fresh install
-- whose role or database sets such a DateStyle and TimeZone: migration
-- 0016 made today's and the week's) are dropped and made again by the new
-- maker. When any of them holds rows, this migration does not run: the
-- new maker's next day would overlap the last of them (ATTACH refuses),
-- the keeper's pass would fail at making partitions ahead, and ingest of
-- that day would stop. Nothing changes (this migration rolls back whole;
-- the consoles running go on as they were) until the days are
-- re-partitioned (docs/runbook.md, "A day partition's bounds are not its
-- day"), then this migration runs.
DO $$
DECLARE
    off text[];
    p text;
    holding text;
BEGIN
    -- Day partitions only (named for a day that exists, as dlq's
    -- dayPartitions reads them): one attached by hand under another name
    -- is left as it is.
    SELECT array_agg(c.relname ORDER BY c.relname) INTO off
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    CROSS JOIN LATERAL (SELECT CASE WHEN c.relname ~ '^dead_letters_p[1-9][0-9]{3}(0[1-9]|1[0-2])(0[1-9]|[12][0-9]|3[01])$'
        THEN to_date(substr(c.relname, 15, 6) || '01', 'YYYYMMDD') + (substr(c.relname, 21, 2)::int - 1) END AS day) b
    WHERE i.inhparent = 'public.dead_letters'::regclass AND c.relname = 'dead_letters_p' || to_char(b.day, 'YYYYMMDD')
      AND NOT coalesce(quarantine_dead_letter_partition_bounded(c.relname), true);
    IF off IS NULL THEN
        RETURN;
    END IF;
    FOREACH p IN ARRAY off LOOP
        EXECUTE format('SELECT CASE WHEN EXISTS (SELECT 1 FROM public.%I) THEN %L END', p, p) INTO holding;
        IF holding IS NOT NULL THEN
            SELECT string_agg(format('%s (%s)', c.relname, pg_get_expr(c.relpartbound, c.oid)), ', ' ORDER BY c.relname) INTO holding
            FROM pg_class c WHERE c.relname = ANY (off) AND c.relnamespace = 'public'::regnamespace;
            RAISE EXCEPTION 'partitions of dead_letters do not hold their UTC days (made over sessions whose DateStyle and TimeZone printed their bounds as another time), and some hold dead letters: %', holding
                USING ERRCODE = 'invalid_object_definition',
                      HINT = 'Nothing was changed. Re-partition them as docs/runbook.md says ("A day partition''s bounds are not its day"), then migrate again.';
        END IF;
    END LOOP;
    FOREACH p IN ARRAY off LOOP
        EXECUTE format('DROP TABLE public.%I', p);
    END LOOP;
    FOREACH p IN ARRAY off LOOP
        PERFORM quarantine_dead_letter_partition_make(to_date(substr(p, 15), 'YYYYMMDD'));
    END LOOP;
END $$;

CREATE OR REPLACE FUNCTION quarantine_dead_letter_partition_empty(p text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    d date := quarantine_dead_letter_partition_day(p);
    rel oid := format('public.%I', p)::regclass;
    deadline timestamptz := clock_timestamp() + interval '300 milliseconds';
BEGIN
    -- The caller counted, kept and audited the name's day: a table holding
    -- other hours would lose rows nobody counted.
    IF NOT coalesce(quarantine_dead_letter_partition_bounded(p), false) THEN
        RAISE EXCEPTION '% does not hold exactly its day (% UTC): it is not emptied whole; see the runbook, "A day partition''s bounds are not its day"', p, d
            USING ERRCODE = 'invalid_object_definition';
    END IF;
    LOOP
        BEGIN
            EXECUTE format('LOCK TABLE public.%I IN ACCESS EXCLUSIVE MODE NOWAIT', p);
            EXIT;
        EXCEPTION WHEN lock_not_available THEN
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
    IF quarantine_dead_letter_partition_busy(d) THEN
        RAISE EXCEPTION '% holds dead letters of open replay requests: it is not emptied', p USING ERRCODE = '55000';
    END IF;
    EXECUTE format('TRUNCATE public.%I', p);
END $$;
COMMENT ON FUNCTION quarantine_dead_letter_partition_empty(text) IS 'Empties past day partition p (TRUNCATE) unless an open replay request names a dead letter of it (55000), or p does not hold exactly its name''s day (42P17). Takes ACCESS EXCLUSIVE without queueing for it (NOWAIT, again every 10 ms for at most 300 ms; 55P03 at once when a writer of the day waits), so that it never deadlocks with a writer of the day and never holds up readers while it waits (migrations 0048, 0074).';
