-- A refused bulk selection is one denied audit row per tenant
-- (dlq.RefusedIDs): object dead_letter, object_id its first ten ids
-- ("17,18,19,...") and the ids by reason in after.refused
-- ({"not open": [17, 18], ...}, up to 1,000 ids). The log's Object filter
-- and a dead letter's trail matched object_id only, so filtering by
-- "dead_letter 18", or opening dead letter 18's page, never showed that
-- someone tried to discard #18 in a selection (review round 32).
--
-- This index lets both find such a row by any id it lists (audit/query.go,
-- refusedIDs and condRefused): the ids flattened into one array, whatever
-- the reasons (free text, the keys), in a GIN index with jsonb_path_ops,
-- which serves containment (@> [18]) with one hashed entry per id. A
-- jsonb_path_ops index on after->'refused' itself cannot serve a path
-- through keys it does not know ($.* is no path it hashes): a jsonpath
-- query of it read the whole index. jsonb_path_query_array is immutable.
--
-- Partial: only denied rows about dead letters carry such a list, a small
-- part of a log that lives at millions of rows; the other denied rows of
-- dead letters (a probe of one id) are in it with no ids. An index needs
-- no grant: the runtime role keeps SELECT and INSERT on audit_log, and the
-- table its triggers (the chain guard is untouched).
--
-- Building it holds audit_log's SHARE lock for one read of the table:
-- appends (and so every change the console makes) wait for it, a few
-- seconds per million rows.
CREATE INDEX audit_log_refused_idx ON audit_log
    USING gin ((jsonb_path_query_array(after -> 'refused', '$.*[*]')) jsonb_path_ops)
    WHERE object_type = 'dead_letter' AND outcome = 'denied';
COMMENT ON INDEX audit_log_refused_idx IS 'The ids of dead letters a refused bulk selection lists in after.refused, for the Object filter and a dead letter''s trail (audit.condRefused).';
