-- Migration 0079's rewound_at kept, after a DLQ stream was found to have
-- lost its last messages, the stored time of the first message after the
-- loss: no row stored before it counted for a sequence from there on. A
-- server whose clock is behind the lost one's (a VM reverted to a
-- snapshot, a replaced node) stores the new messages "before" it, and
-- the first new one was then not found at all; and kept messages stored
-- before it were all read again. The sweep now proves the sequences the
-- loss may have reused (strict_from through strict_to) by each message's
-- own source key (its sequence and stored time), read from the stream:
-- the lost message's row is no proof of the new one's, whatever the
-- clocks. Nothing wrote rewound_at but a console of this release.
ALTER TABLE ingest_sweep_watermark
    DROP COLUMN rewound_at,
    ADD COLUMN strict_from bigint,
    ADD COLUMN strict_to   bigint,
    ADD CONSTRAINT ingest_sweep_watermark_strict
        CHECK ((strict_from IS NULL) = (strict_to IS NULL) AND (strict_from IS NULL OR (strict_from > 0 AND strict_from <= strict_to)));
COMMENT ON COLUMN ingest_sweep_watermark.strict_from IS 'After the stream was found to have lost messages and numbered new ones with their sequences (probe_seq), the first sequence the loss may have reused: from it through strict_to each message is proven by its own source key, read from the stream, not by a row of its sequence. NULL: none.';
COMMENT ON COLUMN ingest_sweep_watermark.strict_to IS 'The last sequence proven so (the lost probe''s, or the last proven before the loss if later); NULL once the sweep is past it.';
