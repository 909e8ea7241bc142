-- A consumer changed by hand in a way that may pass dead letters over (a
-- filter, a max deliver) is put back by the check of any replica, which
-- then moves the consumer back to where it may have started to pass them
-- over (dlq/ingest_consumer.go, putBack). That move-back was owed only in
-- the memory of the replica that put the settings back: one that died in
-- between left it owed to nobody, and the stream's limits later deleted
-- the dead letters passed over, never stored. It is now recorded here
-- before the settings are put back, and the next check of any replica
-- carries it out and removes the row, holding it locked meanwhile so that
-- two replicas never move the consumer in turn.
CREATE TABLE ingest_moveback_owed (
    stream   text        NOT NULL,
    consumer text        NOT NULL,
    from_seq bigint      NOT NULL CHECK (from_seq >= 0),
    version  bigint      GENERATED ALWAYS AS IDENTITY,
    owed_at  timestamptz NOT NULL DEFAULT now(),
    changes  text        NOT NULL DEFAULT '',
    PRIMARY KEY (stream, consumer)
);
COMMENT ON TABLE ingest_moveback_owed IS 'Move-backs owed on the console''s ingest consumers: consumer on stream must be moved back to from_seq (never forward past its ack floor) so that what a setting changed by hand passed over is delivered again; removed once done.';
COMMENT ON COLUMN ingest_moveback_owed.from_seq IS 'The first stream sequence the consumer may have passed over; 0: the stream''s first. An update only lowers it (trigger ingest_moveback_owed_never_later): an earlier sequence owed is never replaced by a later one.';
COMMENT ON COLUMN ingest_moveback_owed.version IS 'Drawn anew at every owe: a row is removed only by the version read, so a move-back owed again meanwhile stays owed.';
COMMENT ON COLUMN ingest_moveback_owed.changes IS 'The changes put back when it was last owed ("setting: theirs → ours"), for whoever reads the row.';

CREATE FUNCTION quarantine_moveback_never_later() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.from_seq > OLD.from_seq OR NEW.stream <> OLD.stream OR NEW.consumer <> OLD.consumer THEN
        RAISE EXCEPTION 'the move-back owed on consumer % of stream % from #% is never replaced by a later one (#%)',
            OLD.consumer, OLD.stream, OLD.from_seq, NEW.from_seq;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER ingest_moveback_owed_never_later BEFORE UPDATE ON ingest_moveback_owed
    FOR EACH ROW EXECUTE FUNCTION quarantine_moveback_never_later();

-- The runtime role owes (INSERT, or UPDATE to an earlier sequence), reads
-- and locks (SELECT ... FOR UPDATE), and removes a move-back once done
-- (DELETE). It cannot drop the trigger (it owns nothing) nor TRUNCATE.
GRANT SELECT, INSERT, UPDATE, DELETE ON ingest_moveback_owed TO quarantine_runtime;
