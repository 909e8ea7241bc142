-- dead_letters partitioned by time (docs/architecture.md, "Storage at
-- scale"): one native range partition per UTC day of dead_lettered_at.
--
-- dead_lettered_at is when JetStream stored the dead letter (the DLQ
-- message's, or the captured advisory's, stream timestamp), never a value a
-- producer sends: a redelivery carries the same one, so it lands in the same
-- partition and meets its own source key there.
--
-- Partitions are made ahead, and on demand for a dead letter that arrives
-- for a day without one, by the console through the functions below: they
-- run as the owner of the schema (SECURITY DEFINER), take validated
-- arguments, and are all the runtime role may do to the table's structure.
-- Retention (dlq/retention.go) empties and drops whole past days when
-- everything in them may go, and deletes in bounded batches otherwise.

-- ---------------------------------------------------------------------------
-- The table.
-- ---------------------------------------------------------------------------

-- Replay items and jobs name their dead letter by id and time: a table
-- partitioned by time can only be referenced by a key that holds the time,
-- and a join on both reads one partition. The foreign keys go: retention
-- may remove a dead letter that a finished request names (the request
-- page says it was purged); it never removes one an open request holds.
ALTER TABLE replay_items DROP CONSTRAINT replay_items_dead_letter_id_fkey;
ALTER TABLE replay_jobs DROP CONSTRAINT replay_jobs_dead_letter_id_fkey;
ALTER TABLE replay_items ADD COLUMN dead_lettered_at timestamptz;
ALTER TABLE replay_jobs ADD COLUMN dead_lettered_at timestamptz;
UPDATE replay_items i SET dead_lettered_at = d.dead_lettered_at FROM dead_letters d WHERE d.id = i.dead_letter_id;
UPDATE replay_jobs j SET dead_lettered_at = d.dead_lettered_at FROM dead_letters d WHERE d.id = j.dead_letter_id;
ALTER TABLE replay_items ALTER COLUMN dead_lettered_at SET NOT NULL;
ALTER TABLE replay_jobs ALTER COLUMN dead_lettered_at SET NOT NULL;
COMMENT ON COLUMN replay_items.dead_lettered_at IS 'dead_lettered_at of the dead letter: with dead_letter_id, its key in the partitioned table.';
COMMENT ON COLUMN replay_jobs.dead_lettered_at IS 'dead_lettered_at of the dead letter: with dead_letter_id, its key in the partitioned table.';

-- Rows stored before migration 0008 have no source key: they get the one a
-- delivery made by hand gets (dlq.Store.Insert), exact and unique as their
-- (stream, sequence, consumer) was.
UPDATE dead_letters SET source_key = sha256(convert_to(
    E'quarantine source v1\n' || source_stream || ' #' || coalesce(source_seq, 0)::text || ' consumer ' || source_consumer, 'UTF8'))
WHERE source_key IS NULL;

ALTER TABLE dead_letters RENAME TO dead_letters_unpartitioned;
CREATE TABLE dead_letters (LIKE dead_letters_unpartitioned
    INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING STORAGE INCLUDING COMPRESSION INCLUDING COMMENTS)
    PARTITION BY RANGE (dead_lettered_at);
COMMENT ON TABLE dead_letters IS 'Dead letters as received from NATS, one row per DLQ message or captured advisory; one partition per UTC day of dead_lettered_at (dead_letters_pYYYYMMDD).';
COMMENT ON COLUMN dead_letters.id IS 'Identity; with dead_lettered_at the primary key (a partitioned table''s keys hold its partition key). Only the identity sequence makes ids, so an id names one row.';

ALTER TABLE dead_letters
    ADD CONSTRAINT dead_letters_status_check CHECK (status IN
        ('quarantined', 'replay_requested', 'replaying', 'replayed', 'replay_failed', 'needs_reconciliation', 'discarded', 'resolved')),
    ADD CONSTRAINT dead_letters_source_kind_check CHECK (source_kind IN ('dlq', 'advisory')),
    ADD CONSTRAINT dead_letters_source_key_check CHECK (source_key IS NOT NULL AND octet_length(source_key) = 32) NOT VALID,
    ADD CONSTRAINT dead_letters_bounds_check CHECK (octet_length(tenant) <= 128 AND octet_length(item_type) <= 256) NOT VALID;

-- Runtime privileges: the table is new (those of the old one went with it).
GRANT SELECT, INSERT, UPDATE, DELETE ON dead_letters TO quarantine_runtime;

-- ---------------------------------------------------------------------------
-- Partition upkeep.
-- ---------------------------------------------------------------------------

CREATE FUNCTION quarantine_dead_letter_partition_name(day date) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 'dead_letters_p' || to_char(day, 'YYYYMMDD');
COMMENT ON FUNCTION quarantine_dead_letter_partition_name(date) IS 'Name of the partition of dead_letters holding one UTC day.';

-- Makes the partition of one UTC day when there is none. It is made as a
-- table of its own and attached (ATTACH takes a lock that lets reads and
-- writes of dead_letters go on; CREATE ... PARTITION OF would stop them).
-- Not granted: the migration and quarantine_dead_letter_partitions call it.
CREATE FUNCTION quarantine_dead_letter_partition_make(day date) RETURNS boolean
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
REVOKE ALL ON FUNCTION quarantine_dead_letter_partition_make(date) FROM PUBLIC;

-- quarantine_dead_letter_partitions makes the partitions of the UTC days of
-- the given times that have none, and returns how many it made. At most
-- 400 times per call, days from 2000-01-01 to 400 days from now (anything
-- else is refused with SQLSTATE 22023). Callers are serialised.
CREATE FUNCTION quarantine_dead_letter_partitions(days timestamptz[]) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    d date;
    made integer := 0;
    today date := (now() AT TIME ZONE 'UTC')::date;
BEGIN
    IF cardinality(days) > 400 THEN
        RAISE EXCEPTION 'at most 400 days of partitions at once, not %', cardinality(days) USING ERRCODE = '22023';
    END IF;
    PERFORM pg_advisory_xact_lock(5859380637103390721); -- "QDLPART" + 1: one maker at a time
    FOR d IN SELECT DISTINCT (x AT TIME ZONE 'UTC')::date FROM unnest(days) AS x WHERE x IS NOT NULL ORDER BY 1 LOOP
        IF d < DATE '2000-01-01' OR d > today + 400 THEN
            RAISE EXCEPTION 'no partition of dead_letters is made for %: days from 2000-01-01 to 400 days from now only', d
                USING ERRCODE = '22023';
        END IF;
        IF quarantine_dead_letter_partition_make(d) THEN
            made := made + 1;
        END IF;
    END LOOP;
    RETURN made;
END $$;
REVOKE ALL ON FUNCTION quarantine_dead_letter_partitions(timestamptz[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quarantine_dead_letter_partitions(timestamptz[]) TO quarantine_runtime;

-- quarantine_dead_letter_partition_day returns the day partition p holds,
-- and refuses (22023) a name that is not a partition of dead_letters or
-- whose day is not over (today's and later partitions are never emptied or
-- dropped).
CREATE FUNCTION quarantine_dead_letter_partition_day(p text) RETURNS date
    LANGUAGE plpgsql STABLE SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    d date;
BEGIN
    IF p IS NULL OR p !~ '^dead_letters_p[0-9]{8}$' THEN
        RAISE EXCEPTION '% is not a partition of dead_letters', p USING ERRCODE = '22023';
    END IF;
    d := to_date(substr(p, 15), 'YYYYMMDD');
    IF quarantine_dead_letter_partition_name(d) <> p OR NOT EXISTS (
        SELECT 1 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'public.dead_letters'::regclass AND c.relname = p AND c.relnamespace = 'public'::regnamespace) THEN
        RAISE EXCEPTION '% is not a partition of dead_letters', p USING ERRCODE = '22023';
    END IF;
    IF d >= (now() AT TIME ZONE 'UTC')::date THEN
        RAISE EXCEPTION '% holds today or a later day: only past days are emptied or dropped', p USING ERRCODE = '22023';
    END IF;
    RETURN d;
END $$;
REVOKE ALL ON FUNCTION quarantine_dead_letter_partition_day(text) FROM PUBLIC;

-- quarantine_dead_letter_partition_busy reports whether a dead letter of
-- day d is in a replay request that is not closed (a draft too), or held
-- (an item that needs reconciliation stays held after its request ended),
-- or is itself being replayed or waits for a person to reconcile it.
CREATE FUNCTION quarantine_dead_letter_partition_busy(d date) RETURNS boolean
    LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp
    RETURN EXISTS (
        SELECT 1 FROM replay_items i JOIN replay_requests r ON r.id = i.request_id
        WHERE (i.held OR r.status NOT IN ('done', 'done_with_problems', 'rejected', 'cancelled', 'void'))
          AND i.dead_lettered_at >= d::timestamp AT TIME ZONE 'UTC' AND i.dead_lettered_at < (d + 1)::timestamp AT TIME ZONE 'UTC')
    OR EXISTS (
        SELECT 1 FROM dead_letters x
        WHERE x.dead_lettered_at >= d::timestamp AT TIME ZONE 'UTC' AND x.dead_lettered_at < (d + 1)::timestamp AT TIME ZONE 'UTC'
          AND x.status IN ('replay_requested', 'replaying', 'needs_reconciliation'));
REVOKE ALL ON FUNCTION quarantine_dead_letter_partition_busy(date) FROM PUBLIC;

-- quarantine_dead_letter_partition_hold locks past day partition p against
-- writes until the transaction ends (reads go on), so that what the caller
-- counts in it is what quarantine_dead_letter_partition_empty removes.
CREATE FUNCTION quarantine_dead_letter_partition_hold(p text) RETURNS date
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    d date := quarantine_dead_letter_partition_day(p);
BEGIN
    EXECUTE format('LOCK TABLE public.%I IN SHARE MODE', p);
    RETURN d;
END $$;
REVOKE ALL ON FUNCTION quarantine_dead_letter_partition_hold(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quarantine_dead_letter_partition_hold(text) TO quarantine_runtime;

-- quarantine_dead_letter_partition_empty removes every row of past day
-- partition p at once (TRUNCATE: no row-by-row deletes), and refuses
-- (55000) while any of them is in a replay request that is not closed. The
-- caller has counted what goes (under _hold) and writes the audit row and
-- the counters in the same transaction.
CREATE FUNCTION quarantine_dead_letter_partition_empty(p text) RETURNS void
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
REVOKE ALL ON FUNCTION quarantine_dead_letter_partition_empty(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quarantine_dead_letter_partition_empty(text) TO quarantine_runtime;

-- quarantine_dead_letter_partition_drop drops past day partition p when it
-- holds no row, and reports whether it did (false: rows arrived since).
-- Dropping a partition locks dead_letters for a moment: the wait for that
-- lock is bounded (2 s, SQLSTATE 55P03 after), and the caller tries again
-- at its next run.
CREATE FUNCTION quarantine_dead_letter_partition_drop(p text) RETURNS boolean
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
REVOKE ALL ON FUNCTION quarantine_dead_letter_partition_drop(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quarantine_dead_letter_partition_drop(text) TO quarantine_runtime;

-- ---------------------------------------------------------------------------
-- The rows: partitions for every day that has dead letters, and for the
-- days around today; then the rows (ids kept), then the indexes.
-- ---------------------------------------------------------------------------

SELECT quarantine_dead_letter_partition_make(day)
FROM (SELECT DISTINCT (dead_lettered_at AT TIME ZONE 'UTC')::date AS day FROM dead_letters_unpartitioned
      UNION SELECT (now() AT TIME ZONE 'UTC')::date + k FROM generate_series(-1, 7) AS k) days
ORDER BY day;

INSERT INTO dead_letters OVERRIDING SYSTEM VALUE SELECT * FROM dead_letters_unpartitioned;
-- Ids go on from where the old table's sequence stood (renaming a table
-- keeps its sequence's name; the new table's got another).
SELECT setval(pg_get_serial_sequence('dead_letters', 'id'), last_value, is_called) FROM dead_letters_id_seq;
DROP TABLE dead_letters_unpartitioned;
DO $$ BEGIN
    EXECUTE format('ALTER SEQUENCE %s RENAME TO dead_letters_id_seq', pg_get_serial_sequence('dead_letters', 'id'));
END $$;

-- The same indexes as before (migrations 0001, 0004, 0008, 0010), on every
-- partition; keys that must be unique hold dead_lettered_at.
ALTER TABLE dead_letters ADD CONSTRAINT dead_letters_pkey PRIMARY KEY (id, dead_lettered_at);
CREATE UNIQUE INDEX dead_letters_source_key_idx ON dead_letters (dead_lettered_at, source_key);
CREATE INDEX dead_letters_unresolved_age_idx ON dead_letters (tenant, dead_lettered_at)
    WHERE status IN ('quarantined', 'replay_requested', 'replaying', 'replay_failed', 'needs_reconciliation');
CREATE INDEX dead_letters_tenant_time_idx ON dead_letters (tenant, dead_lettered_at, id);
CREATE INDEX dead_letters_dims_time_idx ON dead_letters (tenant, item_type, error_class, status, dead_lettered_at, id);
CREATE INDEX dead_letters_group_time_idx ON dead_letters (tenant, fingerprint, dead_lettered_at, id);
CREATE INDEX dead_letters_msg_id_idx ON dead_letters (tenant, left(msg_id, 256));
CREATE INDEX dead_letters_operation_id_idx ON dead_letters (tenant, left(operation_id, 256)) WHERE operation_id <> '';
CREATE INDEX dead_letters_correlation_id_idx ON dead_letters (tenant, left(correlation_id, 256)) WHERE correlation_id <> '';
CREATE INDEX dead_letters_error_trgm_idx ON dead_letters USING gin ((left(error, 1024)) gin_trgm_ops);
CREATE INDEX dead_letters_replay_of_idx ON dead_letters (replay_of) WHERE replay_of IS NOT NULL;

-- Replay items and jobs are read by their dead letter's key; open requests
-- are what retention looks for.
DROP INDEX replay_items_dead_letter_idx;
CREATE INDEX replay_items_dead_letter_idx ON replay_items (dead_letter_id, dead_lettered_at);
CREATE INDEX replay_requests_open_idx ON replay_requests (id)
    WHERE status NOT IN ('done', 'done_with_problems', 'rejected', 'cancelled', 'void');

-- ---------------------------------------------------------------------------
-- Retention runs, and what the keeper looks at.
-- ---------------------------------------------------------------------------

-- The error groups' arrivals are summaries: the keeper trims minute rows
-- older than two days and hour rows older than the longest chart.
CREATE INDEX dead_letter_arrivals_minute_idx ON dead_letter_arrivals_minute (minute);
CREATE INDEX dead_letter_arrivals_hour_idx ON dead_letter_arrivals (hour);
