ALTER TABLE ingest_sweep_watermark DROP COLUMN held, DROP COLUMN proven_to;
