DROP TABLE ingest_watchers;
