DROP TABLE ingest_prefixes;
