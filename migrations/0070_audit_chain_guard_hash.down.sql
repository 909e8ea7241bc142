-- Back to migration 0038's chain guard: a row's hash is not checked.
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

DROP FUNCTION audit_chain_hash(bigint, bytea, bytea);
