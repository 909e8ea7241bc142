ALTER TABLE ingest_sweep_watermark
    DROP CONSTRAINT ingest_sweep_watermark_strict,
    DROP COLUMN strict_from,
    DROP COLUMN strict_to,
    ADD COLUMN rewound_at timestamptz;
