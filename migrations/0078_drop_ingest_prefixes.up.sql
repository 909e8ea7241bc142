-- Migration 0077's ingest_prefixes told a DLQ_SUBJECT_PREFIX change of one
-- deployment from a second deployment by the prefixes its database had
-- used; a database restored from another deployment's dump carries that
-- one's, and took over its DLQ stream. A prefix change is now recorded in
-- the stream's metadata by hand (docs/runbook.md, "DLQ stream of another
-- deployment"), and nothing reads the table.
DROP TABLE ingest_prefixes;
