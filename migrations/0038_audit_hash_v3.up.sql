-- Hash version 3 (audit/hash.go). An entry's hash was SHA-256 over its
-- content fields and prev_hash (version 2), so the stub a filtered export
-- writes for an entry it leaves out (seq, prev_hash, hash; no content)
-- could not be re-hashed: its prev_hash was taken on trust, and an
-- included entry before it could be rewritten with a fresh hash. From now
-- on an entry's hash is SHA-256 over ("quarantine-audit-v3", seq, content
-- digest, prev_hash), the content digest SHA-256 over the row's nonce and
-- the version 2 encoding of its content fields under its own tag and
-- without prev_hash. A stub carries the digest, and the verifier
-- re-hashes it.
--
-- nonce is 16 random bytes the appender draws for each row: a stub shows
-- no nonce, so its digest and hash confirm no guess of the row's content
-- (another tenant's name, its counts), which an unkeyed digest of a few
-- small fields would. content_digest is stored so that an export reads
-- it, not the content of an entry it leaves out (another tenant's).
-- hash_version is NULL for the rows written before it (their encoding is
-- 1 or 2, as actor_email_verified is NULL or not): audit_log takes no
-- UPDATE, and their hashes stay as they were; the chain goes on across
-- the change.
ALTER TABLE audit_log ADD COLUMN hash_version smallint, ADD COLUMN content_digest bytea, ADD COLUMN nonce bytea;
COMMENT ON COLUMN audit_log.hash_version IS 'The encoding hash covers: 3, or NULL for rows written before this column (encoding 1 when actor_email_verified is NULL, else 2). See audit/hash.go.';
COMMENT ON COLUMN audit_log.content_digest IS 'Version 3: SHA-256 over the row''s nonce and content fields (audit_content_digest); hash covers it with seq and prev_hash. What an export shows of an entry it leaves out. NULL before version 3.';
COMMENT ON COLUMN audit_log.nonce IS 'Version 3: 16 random bytes drawn at the append, which content_digest covers first, so that a stub (no nonce) confirms no guess of the content. NULL before version 3.';

-- NOT VALID skips the scan of the rows already there (under this
-- migration's exclusive lock): the columns were just added, so every one
-- of them is NULL in all three, which the check allows. New rows are
-- checked.
ALTER TABLE audit_log ADD CONSTRAINT audit_log_hash_version_check CHECK (
    (hash_version IS NULL AND content_digest IS NULL AND nonce IS NULL)
    OR (hash_version = 3 AND octet_length(content_digest) = 32 AND octet_length(nonce) = 16
        AND actor_email_verified IS NOT NULL)) NOT VALID;

-- audit_content_digest is the version 3 content digest of a row: its
-- nonce, then the fields of the version 2 encoding, under the tag
-- 'quarantine-audit-v3-content', without prev_hash.
CREATE FUNCTION audit_content_digest(e public.audit_log) RETURNS bytea
    LANGUAGE sql STABLE AS $$
    SELECT sha256(
        public.audit_hash_field(convert_to('quarantine-audit-v3-content', 'UTF8')) ||
        public.audit_hash_field(e.nonce) ||
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
        public.audit_hash_field(convert_to(e.user_agent, 'UTF8')))
$$;
COMMENT ON FUNCTION audit_content_digest(public.audit_log) IS 'The content digest of an audit_log row, encoding v3, as package audit computes it (hash.go); recomputed from the row, not read from content_digest.';

-- Version 3 rows hash their seq, their content digest (recomputed from
-- the row) and prev_hash; every other row as before (encoding v2).
CREATE OR REPLACE FUNCTION audit_entry_hash(e public.audit_log) RETURNS bytea
    LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN e.hash_version = 3 THEN sha256(
        public.audit_hash_field(convert_to('quarantine-audit-v3', 'UTF8')) ||
        public.audit_hash_field(int8send(e.seq)) ||
        public.audit_hash_field(public.audit_content_digest(e)) ||
        public.audit_hash_field(e.prev_hash))
    ELSE sha256(
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
        public.audit_hash_field(e.prev_hash)) END
$$;
COMMENT ON FUNCTION audit_entry_hash(public.audit_log) IS 'The hash of an audit_log row, encoding v3 when hash_version is 3, else v2, as package audit computes it (hash.go).';

-- The chain guard of migration 0034, and one rule more: hash versions
-- never go back along the chain. After a row of version 3, one without
-- (written by a console from before it, during a rolling upgrade) is
-- refused, so that a verifier may refuse a stub that claims to be older
-- than the line before it (a version 3 stub with its digest taken off, to
-- pass as one nobody can re-hash).
CREATE OR REPLACE FUNCTION audit_log_continues_chain() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    prev record;
    prev_at timestamptz;
BEGIN
    IF NEW.seq > 1 THEN
        SELECT l.hash, l.at, l.hash_version INTO prev FROM public.audit_log l WHERE l.seq = NEW.seq - 1;
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
        IF COALESCE(NEW.hash_version, 2) < COALESCE(prev.hash_version, 2) THEN
            RAISE EXCEPTION 'audit entry seq %: hash version % after version % (seq %): versions never go back along the chain (a console older than this schema is still appending?)',
                NEW.seq, COALESCE(NEW.hash_version::text, '1 or 2'), prev.hash_version, NEW.seq - 1
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
COMMENT ON FUNCTION audit_log_continues_chain() IS 'Refuses an audit_log row that does not continue the entry before it: seq, prev_hash, at and hash_version are checked.';
