-- The sweep (dlq/ingest_sweep.go) goes on past a dead letter it cannot
-- store (PostgreSQL refuses it in every form, or its read from the stream
-- fails): the watermark stays before it, and the sequences after it are
-- proven all the same. How far they were proven, and which ones it holds,
-- were kept in the memory of the console that swept: a second held dead
-- letter further on was tried again only once the first was stored, and
-- a console restarted, or another replica taking the stream's turns,
-- proved everything after the watermark again. Both are now kept here,
-- with the watermark, under the same row lock: any replica goes on where
-- the last stopped, and every sweep tries each held one again.
ALTER TABLE ingest_sweep_watermark
    ADD COLUMN proven_to bigint   NOT NULL DEFAULT 0 CHECK (proven_to >= 0),
    ADD COLUMN held      bigint[] NOT NULL DEFAULT '{}' CHECK (cardinality(held) <= 100);
COMMENT ON COLUMN ingest_sweep_watermark.proven_to IS 'The last stream sequence the sweep looked at: every sequence after swept_to up to it is proven as swept_to''s are, but those in held. Below swept_to (0 on a row made before migration 0043): swept_to.';
COMMENT ON COLUMN ingest_sweep_watermark.held IS 'The sequences after swept_to, up to proven_to and in order, that the sweep could not store (PostgreSQL refused them in every form, or their read failed); it tries each again at every sweep. swept_to is the one before the first of them. At most 100: past that the sweep stops going on until some are stored.';
