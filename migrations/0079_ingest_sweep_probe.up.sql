-- A DLQ stream can lose the last messages it stored and keep its name and
-- creation time: a server that crashed before it wrote them to disk (a
-- single node syncs every two minutes by default), a volume or VM restored
-- from a snapshot, an R1 stream's node replaced. JetStream then numbers
-- the next dead letters with the lost messages' sequences, and resets the
-- ingest consumer's ack floor to match. The sweep had proven those
-- sequences already (proven_to past the stream's new end) and never looked
-- at them again: a new dead letter acked there without a row (an on-call's
-- `nats consumer next`, a late ack of the lost one's delivery) was never
-- stored. The sweep now keeps one message it proved, by sequence and
-- stored time, and reads it again at every sweep: gone past the stream's
-- end, or another message at its sequence, the stream was rewound, and the
-- sweep proves again from the first message stored after it, counting no
-- row stored before that one for it (rewound_at).
ALTER TABLE ingest_sweep_watermark
    ADD COLUMN probe_seq  bigint CHECK (probe_seq > 0),
    ADD COLUMN probe_at   timestamptz,
    ADD COLUMN rewound_at timestamptz,
    ADD CONSTRAINT ingest_sweep_watermark_probe CHECK ((probe_seq IS NULL) = (probe_at IS NULL));
COMMENT ON COLUMN ingest_sweep_watermark.probe_seq IS 'A sequence the sweep proved (the last it read at or before proven_to), read again at every sweep: a stream whose last sequence is now before it, or that holds a message of another stored time there (probe_at), lost what it stored and numbered new messages with the same sequences. NULL: none read yet.';
COMMENT ON COLUMN ingest_sweep_watermark.probe_at IS 'The stored time of the message at probe_seq when the sweep proved it (the NATS server''s clock, to the microsecond).';
COMMENT ON COLUMN ingest_sweep_watermark.rewound_at IS 'The stored time of the first message after the stream was last found rewound: a row of a sequence after it stored before that time is the lost message''s, no proof of the new one. NULL: never rewound (since it was made).';
