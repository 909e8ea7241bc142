ALTER TABLE ingest_sweep_watermark
    DROP CONSTRAINT ingest_sweep_watermark_strict,
    DROP CONSTRAINT ingest_sweep_watermark_probe,
    DROP COLUMN probe_seq,
    DROP COLUMN probe_at,
    DROP COLUMN strict_from,
    DROP COLUMN strict_to;
