ALTER TABLE ingest_sweep_watermark
    DROP CONSTRAINT ingest_sweep_watermark_probe,
    DROP COLUMN probe_seq,
    DROP COLUMN probe_at,
    DROP COLUMN rewound_at;
