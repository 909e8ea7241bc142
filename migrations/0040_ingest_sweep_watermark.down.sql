DROP TABLE ingest_sweep_watermark;
