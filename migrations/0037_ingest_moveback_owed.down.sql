DROP TABLE ingest_moveback_owed;
DROP FUNCTION quarantine_moveback_never_later();
