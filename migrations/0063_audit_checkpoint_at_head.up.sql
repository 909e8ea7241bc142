-- A checkpoint signs the head of the audit chain: the console records one
-- only at the head, under its checkpoint lock (audit.RecordTrusting), so
-- each is above every one before it. The runtime role may insert one at
-- any seq that has none (0025 checks it names an entry, 0054 its date):
-- one below the newest checkpoint was counted nowhere, for the console
-- counts and refuses only checkpoints newer than the last that verifies
-- (quarantine_audit_unverified_checkpoints, audit.checkpoint_refused), and
-- no alert fired. Now a checkpoint below the newest is refused, whoever
-- inserts it. The check takes the recorders' lock (audit/checkpoint.go
-- checkpointLockKey; the console holds it already) and reads the newest
-- seq after it, which only read committed does (each statement sees what
-- committed before it): an insert in another isolation is refused too, as
-- audit appends are, so that no snapshot taken before a newer checkpoint
-- committed lets one in below it.
CREATE FUNCTION audit_checkpoint_at_head() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    newest bigint;
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'audit checkpoint at seq %: checkpoints are recorded in read committed transactions', NEW.seq
            USING ERRCODE = 'check_violation';
    END IF;
    PERFORM pg_advisory_xact_lock(x'5141554449540002'::bigint);
    SELECT max(c.seq) INTO newest FROM public.audit_checkpoints c;
    IF NEW.seq < newest THEN
        RAISE EXCEPTION 'audit checkpoint at seq % is below the newest checkpoint, at seq %', NEW.seq, newest
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;
COMMENT ON FUNCTION audit_checkpoint_at_head() IS 'Refuses a checkpoint below the newest one (the console signs only at the head), and one inserted outside read committed, where the newest could be missed.';

CREATE TRIGGER audit_checkpoints_at_head BEFORE INSERT ON audit_checkpoints
    FOR EACH ROW EXECUTE FUNCTION audit_checkpoint_at_head();
ALTER TABLE audit_checkpoints ENABLE ALWAYS TRIGGER audit_checkpoints_at_head;
