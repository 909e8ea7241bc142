-- Two things of the audit log.
--
-- 1. The auditor's Operation id filter (audit.Filter.OperationID: every
--    entry of one operation, under whichever message ids it was
--    dead-lettered and replayed) is served as the Message id filter is:
--    a partial index with seq, for the keyset pages.
CREATE INDEX audit_log_operation_id_idx ON audit_log (operation_id, seq) WHERE operation_id <> '';

-- 2. A checkpoint is dated by the database's clock when it is recorded
--    (audit.Record reads clock_timestamp() in the transaction that inserts
--    it). Migration 0025 checks a checkpoint's seq and hash, not its date:
--    anyone with the runtime role's credentials could insert one at the
--    head dated in the year 2999, which a scheduler counting from the
--    newest checkpoint took as signed just now, for ever. The console now
--    counts only from checkpoints whose signature verifies
--    (audit.LatestVerifiedCheckpoint); this refuses a checkpoint dated
--    after the clock at all, whoever inserts it. No tolerance: the date
--    is read from this clock before the insert, in the same transaction.
CREATE FUNCTION audit_checkpoint_not_ahead() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    IF NEW.at > clock_timestamp() THEN
        RAISE EXCEPTION 'audit checkpoint at seq % is dated %, after the database''s clock', NEW.seq, NEW.at
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;
COMMENT ON FUNCTION audit_checkpoint_not_ahead() IS 'Refuses a checkpoint dated after the database clock (a forged date would put off the next interval checkpoint).';

CREATE TRIGGER audit_checkpoints_not_ahead BEFORE INSERT ON audit_checkpoints
    FOR EACH ROW EXECUTE FUNCTION audit_checkpoint_not_ahead();
ALTER TABLE audit_checkpoints ENABLE ALWAYS TRIGGER audit_checkpoints_not_ahead;
