-- A DLQ stream can lose the last messages it stored and keep its name and
-- creation time: a server that crashed before it wrote them to disk (a
-- single node syncs every two minutes by default), a volume or VM restored
-- from a snapshot, an R1 stream's node replaced. JetStream then numbers
-- the next dead letters with the lost messages' sequences, and resets the
-- ingest consumer's ack floor to match. The sweep had proven those
-- sequences already, or proved them by the lost messages' rows: a new dead
-- letter acked there without a row (an on-call's `nats consumer next`, a
-- late ack of the lost one's delivery) was never stored. The sweep now
-- keeps the stream's last message as it saw it, and reads it again at
-- every sweep: gone past the stream's end, or another message at its
-- sequence, the stream was rewound, and the sequences the loss may have
-- reused are proven by each message's own source key (its sequence and
-- stored time), read from the stream, not by a row of its sequence.
ALTER TABLE ingest_sweep_watermark
    ADD COLUMN probe_seq   bigint CHECK (probe_seq > 0),
    ADD COLUMN probe_at    timestamptz,
    ADD COLUMN strict_from bigint,
    ADD COLUMN strict_to   bigint,
    ADD CONSTRAINT ingest_sweep_watermark_probe CHECK ((probe_seq IS NULL) = (probe_at IS NULL)),
    ADD CONSTRAINT ingest_sweep_watermark_strict
        CHECK ((strict_from IS NULL) = (strict_to IS NULL) AND (strict_from IS NULL OR (strict_from > 0 AND strict_from <= strict_to)));
COMMENT ON COLUMN ingest_sweep_watermark.probe_seq IS 'The stream''s last message as a sweep last saw it (its sequence; a sweep with nothing to prove moves it on too, never back), read again at every sweep: a stream whose last sequence is now before it, or that holds a message of another stored time there (probe_at), lost what it stored and numbered new messages with the same sequences. NULL: none seen yet.';
COMMENT ON COLUMN ingest_sweep_watermark.probe_at IS 'The stored time of the message at probe_seq (the NATS server''s clock, to the microsecond).';
COMMENT ON COLUMN ingest_sweep_watermark.strict_from IS 'After the stream was found to have lost messages, the first sequence the loss may have reused (the first message stored less than an hour before the lost probe, never past its sequence): from it through strict_to each message is proven by its own source key, read from the stream. NULL: none.';
COMMENT ON COLUMN ingest_sweep_watermark.strict_to IS 'The last sequence proven so: the lost probe''s, the last proven before the loss, or the last a row stored since names, whichever is later; NULL once the sweep is past it.';
