-- The runtime role may insert into audit_log (it appends), and before this
-- nothing in the database checked that a row continues the chain: one row
-- with another prev_hash or a seq past the head could never be removed,
-- every later append chained onto it, and verify reported the chain broken
-- there for ever. Now every row inserted must continue the entry before
-- it: that entry (seq - 1) exists, prev_hash is its hash, at is no earlier
-- than its at and not ahead of the database clock (by more than a minute,
-- for clocks of other hosts). With the primary key on seq, that makes each
-- row the next entry of the chain: no gap, no fork.
--
-- The trigger does not recompute the row's hash. In SQL that costs about
-- 200 µs a row (measured on 100,000 replay rows), more than everything
-- else a replayed item writes, and it would refuse only rows verify flags
-- anyway: whoever may insert can compute a correct hash for a false entry
-- (the hash has no key), so the guard against that is the signed
-- checkpoints and an anchor kept elsewhere, not this trigger. Verify goes
-- on past a row whose hash is not its contents' and reports each.
-- audit_entry_hash computes it in SQL for an auditor who wants to check
-- rows there (TestDatabaseHashesAsGo keeps it equal to audit/hash.go).
--
-- The check runs AFTER each row, at the end of the statement, so that a
-- bulk COPY (audit.AppendBatch) keeps inserting in batches; it reads the
-- entry before by the primary key's index. A row whose entry before is not
-- committed yet (another appender's, which bypassed the chain's lock) is
-- refused.

-- audit_hash_field is one field of the encoding: 1, the length as 8 bytes
-- big-endian, the bytes; NULL is the single byte 0.
CREATE FUNCTION audit_hash_field(b bytea) RETURNS bytea
    LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN b IS NULL THEN '\x00'::bytea
                ELSE '\x01'::bytea || int8send(octet_length(b)::bigint) || b END
$$;

-- audit_hash_json is jsonb as the hash covers it: its text with the blanks
-- jsonb prints between tokens removed (Go's json.Compact). Strings are
-- matched whole and kept, so blanks inside them stay.
CREATE FUNCTION audit_hash_json(j jsonb) RETURNS bytea
    LANGUAGE sql STABLE AS $$
    SELECT convert_to(regexp_replace(j::text, '("(?:[^"\\]|\\.)*")|[ ]', '\1', 'g'), 'UTF8')
$$;

-- The helpers set no search_path and are STABLE (convert_to and to_char
-- are) so that PostgreSQL inlines them into the trigger's expression (it
-- runs once per row, 100k rows in a bulk append); they name pg_catalog's
-- functions, which come first on every path, and each other with their
-- schema.
CREATE FUNCTION audit_entry_hash(e public.audit_log) RETURNS bytea
    LANGUAGE sql STABLE AS $$
    SELECT sha256(
        public.audit_hash_field(convert_to('quarantine-audit-v2', 'UTF8')) ||
        public.audit_hash_field(int8send(e.seq)) ||
        public.audit_hash_field(convert_to(to_char(e.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), 'UTF8')) ||
        public.audit_hash_field(convert_to(e.actor_issuer, 'UTF8')) ||
        public.audit_hash_field(convert_to(e.actor_subject, 'UTF8')) ||
        public.audit_hash_field(convert_to(e.actor_email, 'UTF8')) ||
        public.audit_hash_field(CASE WHEN e.actor_email_verified THEN '\x01'::bytea ELSE '\x00'::bytea END) ||
        public.audit_hash_field(convert_to(e.tenant, 'UTF8')) ||
        public.audit_hash_field(convert_to(e.action, 'UTF8')) ||
        public.audit_hash_field(convert_to(e.object_type, 'UTF8')) ||
        public.audit_hash_field(convert_to(e.object_id, 'UTF8')) ||
        public.audit_hash_field(convert_to(e.message_id, 'UTF8')) ||
        public.audit_hash_field(convert_to(e.operation_id, 'UTF8')) ||
        public.audit_hash_field(convert_to(e.request_id, 'UTF8')) ||
        public.audit_hash_field(convert_to(e.reason, 'UTF8')) ||
        public.audit_hash_field(convert_to(e.outcome, 'UTF8')) ||
        public.audit_hash_field(public.audit_hash_json(e.before)) ||
        public.audit_hash_field(public.audit_hash_json(e.after)) ||
        public.audit_hash_field(convert_to(e.remote_addr, 'UTF8')) ||
        public.audit_hash_field(convert_to(e.user_agent, 'UTF8')) ||
        public.audit_hash_field(e.prev_hash))
$$;
COMMENT ON FUNCTION audit_entry_hash(public.audit_log) IS 'The hash of an audit_log row, encoding v2, as package audit computes it (hash.go).';

CREATE FUNCTION audit_log_continues_chain() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    prev record;
    prev_at timestamptz;
BEGIN
    IF NEW.seq > 1 THEN
        SELECT l.hash, l.at INTO prev FROM public.audit_log l WHERE l.seq = NEW.seq - 1;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'audit entry seq % is not the next of the chain: there is no seq %', NEW.seq, NEW.seq - 1
                USING ERRCODE = 'check_violation';
        END IF;
        IF NEW.prev_hash IS DISTINCT FROM prev.hash THEN
            RAISE EXCEPTION 'audit entry seq %: prev_hash is not the hash of seq %', NEW.seq, NEW.seq - 1
                USING ERRCODE = 'check_violation';
        END IF;
        prev_at := prev.at;
        IF NEW.at < prev.at THEN
            RAISE EXCEPTION 'audit entry seq % is dated %, before seq % (%)', NEW.seq, NEW.at, NEW.seq - 1, prev.at
                USING ERRCODE = 'check_violation';
        END IF;
    END IF;
    -- Ahead of the database clock only when it is not the time of the
    -- entry before: a clock set back (an NTP step, a failover to a host
    -- behind) leaves appends dated the newest entry's time until the
    -- clock catches up (audit.Append), which must go on.
    IF NEW.at > clock_timestamp() + interval '1 minute' AND (NEW.seq = 1 OR NEW.at > prev_at) THEN
        RAISE EXCEPTION 'audit entry seq % is dated %, ahead of the database clock', NEW.seq, NEW.at
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.actor_email_verified IS NULL THEN
        RAISE EXCEPTION 'audit entry seq %: actor_email_verified is NULL (hash encoding v1, for entries before it existed)', NEW.seq
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION audit_log_continues_chain() IS 'Refuses an audit_log row that does not continue the entry before it: seq, prev_hash and at are checked.';

CREATE TRIGGER audit_log_continues_chain AFTER INSERT ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_continues_chain();
-- ALWAYS: session_replication_role = replica is no way around it.
ALTER TABLE audit_log ENABLE ALWAYS TRIGGER audit_log_continues_chain;
