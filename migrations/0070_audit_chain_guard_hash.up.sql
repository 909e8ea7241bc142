-- The chain guard (migrations 0034, 0038) checks that a row continues the
-- chain (seq, prev_hash, at, hash_version) but not its hash: the runtime
-- role, the console's, could append the next row with the right seq and
-- prev_hash and any hash at all, which verify then reported as an edited
-- row, and the runbook said the console's role could not (review round
-- 32). Now a row of hash version 3 must carry the hash of its tag, seq,
-- content digest and prev_hash, as audit/hash.go computes it (chainHash):
-- one SHA-256 of about 100 bytes a row, nothing like re-hashing the
-- content (about 200 µs a row, migration 0034), so a bulk append keeps its
-- pace.
--
-- What it still cannot check is content_digest against the content (that
-- is the re-hash it leaves out): whoever may insert can append a row whose
-- digest is false and whose hash is that digest's; verify names it
-- ("content_digest is not the digest of its contents"). Rows of version 2
-- are only taken before the first row of version 3 (versions never go back
-- along the chain), from a console older than migration 0038, and are not
-- checked here.

-- audit_chain_hash is the version 3 hash of the entry at seq whose content
-- digest is digest, after the entry whose hash is prev (NULL for seq 1).
CREATE FUNCTION audit_chain_hash(seq bigint, digest bytea, prev bytea) RETURNS bytea
    LANGUAGE sql STABLE AS $$
    SELECT sha256(
        public.audit_hash_field(convert_to('quarantine-audit-v3', 'UTF8')) ||
        public.audit_hash_field(int8send(seq)) ||
        public.audit_hash_field(digest) ||
        public.audit_hash_field(prev))
$$;
COMMENT ON FUNCTION audit_chain_hash(bigint, bytea, bytea) IS 'The hash of an audit_log row of hash version 3 from its seq, content_digest and prev_hash, as package audit computes it (hash.go, chainHash).';

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
    -- The stored digest is taken as it is (re-hashing the content costs
    -- too much a row): verify checks it.
    IF NEW.hash_version = 3 AND NEW.hash IS DISTINCT FROM public.audit_chain_hash(NEW.seq, NEW.content_digest, NEW.prev_hash) THEN
        RAISE EXCEPTION 'audit entry seq %: hash is not the hash of its seq, content_digest and prev_hash (hash version 3)', NEW.seq
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION audit_log_continues_chain() IS 'Refuses an audit_log row that does not continue the entry before it: seq, prev_hash, at and hash_version are checked, and a version 3 row''s hash (audit_chain_hash; its content_digest is not).';
