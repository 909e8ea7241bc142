-- A checkpoint signs an entry of the audit chain as it is: its seq and its
-- hash. The console's runtime role may insert checkpoints (it records them),
-- so before this anyone with its credentials could insert one naming a seq
-- far past the head: the scheduler took the newest checkpoint's seq for
-- the last one signed and never signed a head again (until the chain grew
-- past it), and the page showed the forged one as the latest. Verify
-- reports such a checkpoint (its signature does not check), but only when
-- someone runs it. Now a checkpoint must name an entry that exists, with
-- that entry's hash; one for a seq not written yet, or with another hash,
-- is refused.
CREATE FUNCTION audit_checkpoint_names_entry() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM public.audit_log l WHERE l.seq = NEW.seq AND l.hash = NEW.hash) THEN
        RAISE EXCEPTION 'audit checkpoint at seq % names no entry of the chain with that hash', NEW.seq
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;
COMMENT ON FUNCTION audit_checkpoint_names_entry() IS 'Refuses a checkpoint whose seq and hash are not an entry of audit_log as it is.';

CREATE TRIGGER audit_checkpoints_names_entry BEFORE INSERT ON audit_checkpoints
    FOR EACH ROW EXECUTE FUNCTION audit_checkpoint_names_entry();
ALTER TABLE audit_checkpoints ENABLE ALWAYS TRIGGER audit_checkpoints_names_entry;
