-- The ingest consumer's ack floor says what was acked, not what the
-- console stored: anyone bound to the durable may ack or term a dead
-- letter (an on-call who peeks with `nats consumer next DLQ
-- quarantine-ingest`, which acks), and a filter or max deliver set and
-- taken off by hand between two checks of the consumer makes it pass dead
-- letters over with nothing owed (migration 0037 covers only the changes a
-- check sees). Such a dead letter is never delivered again; the stream's
-- age limit later deletes it, never stored. A sweep (dlq/ingest_sweep.go)
-- now proves, per stream, that every message up to the consumer's ack
-- floor is a row (or was removed by retention, or is gone from the
-- stream), storing from the stream what is not, and records here how far
-- it has proven it. One replica at a time: a sweep holds the stream's row
-- locked (FOR UPDATE SKIP LOCKED) while it advances it.
CREATE TABLE ingest_sweep_watermark (
    stream         text        PRIMARY KEY,
    stream_created timestamptz NOT NULL,
    swept_to       bigint      NOT NULL CHECK (swept_to >= 0),
    swept_at       timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE ingest_sweep_watermark IS 'How far the ingest sweep has proven, per stream, that every message the stream holds is stored (dlq/ingest_sweep.go): a row, a source key retention removed (dead_letters_purged), or gone from the stream.';
COMMENT ON COLUMN ingest_sweep_watermark.stream_created IS 'When the stream swept_to counts in was made (JetStream''s stream info, to the microsecond): a stream deleted and made again numbers from 1 again, and its sweep starts over from its first sequence.';
COMMENT ON COLUMN ingest_sweep_watermark.swept_to IS 'The last stream sequence proven: every sequence up to it is stored, removed by retention, or was gone from the stream when the sweep came to it.';

-- The runtime role makes the row, reads and locks it, and advances it;
-- it never removes it.
GRANT SELECT, INSERT, UPDATE ON ingest_sweep_watermark TO quarantine_runtime;
REVOKE DELETE, TRUNCATE ON ingest_sweep_watermark FROM quarantine_runtime;
