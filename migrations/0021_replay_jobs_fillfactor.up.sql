-- A job's row is written three times while it runs (the claim, the publish
-- gate, the record). The gate's write (first_attempt_at,
-- first_published_at) changes no indexed column, so PostgreSQL can keep it
-- on the row's page without touching the five indexes of the table (a HOT
-- update), but only when that page has room: at the default fillfactor of
-- 100 the claim's new row versions fill their pages, and every gate wrote
-- five index entries per job. Half of each page is left free for those
-- updates. It applies to rows written from now on; existing pages are not
-- rewritten.
ALTER TABLE replay_jobs SET (fillfactor = 50);
COMMENT ON TABLE replay_jobs IS 'Outbox: one row per item of an approved request, written in the approval transaction. fillfactor 50: the publish gate''s update of a claimed job stays on its page (HOT).';
