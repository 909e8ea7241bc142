-- Back to migration 0034's hash function and chain guard. Rows of hash
-- version 3 lose what tells them apart and no longer verify: undo this
-- only before any was written.
CREATE OR REPLACE FUNCTION audit_entry_hash(e public.audit_log) RETURNS bytea
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

CREATE OR REPLACE FUNCTION audit_log_continues_chain() RETURNS trigger
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

DROP FUNCTION audit_content_digest(public.audit_log);
ALTER TABLE audit_log DROP CONSTRAINT audit_log_hash_version_check;
ALTER TABLE audit_log DROP COLUMN nonce, DROP COLUMN content_digest, DROP COLUMN hash_version;
