-- dead_letters_purged (migration 0027) kept the source key of every dead
-- letter retention removed, for good: about 70 bytes each, growing with
-- everything ever removed. A key stands for one stream message (its
-- stream, sequence and stored time, dlq/delivery.go); once that message
-- is gone from its stream it can never be delivered again, and its key
-- guards nothing. So each key now says which stream message it stands
-- for, and the keeper removes, per stream, the keys below the first
-- sequence the stream still holds (dlq/retention_keys.go), in bounded
-- batches, each with its audit row.
--
-- The stream and sequence come from the dead letter's delivery,
-- "<stream> #<seq> stored <time>" (migration 0008): for a DLQ message its
-- position in the DLQ stream, for a captured advisory its position in the
-- advisory stream (source_stream and source_seq name the original there,
-- not the message the key stands for). A delivery of another form (a row
-- made by hand, "unreadable delivery", or none before 0008) gives none,
-- and so do the keys kept before this migration: they are never trimmed
-- by the keeper (docs/runbook.md says how an owner removes them).
ALTER TABLE dead_letters_purged ADD COLUMN stream text, ADD COLUMN stream_seq bigint;
COMMENT ON COLUMN dead_letters_purged.stream IS 'The stream of the message the key stands for (the DLQ stream, or the advisory stream for a captured advisory); NULL: not known (kept before migration 0028, or a delivery not read from a stream), never trimmed by the keeper.';
COMMENT ON COLUMN dead_letters_purged.stream_seq IS 'Its sequence in that stream: the keeper removes keys below the stream''s first sequence (the message is gone, it cannot be delivered again).';
COMMENT ON TABLE dead_letters_purged IS 'Source keys of the dead letters retention removed (dlq/retention.go): ingest does not store their messages again (dlq/store_copy.go, storedKeys). A key goes once its message is gone from its stream (below the first sequence the stream holds, quarantine_purged_keys_trim, dlq/retention_keys.go).';
CREATE INDEX dead_letters_purged_stream_idx ON dead_letters_purged (stream, stream_seq) WHERE stream IS NOT NULL;

-- The stream and sequence a delivery names; NULLs for a delivery of
-- another form. A sequence of more than 18 digits (past bigint) is not
-- read: its key is kept.
CREATE FUNCTION quarantine_delivery_position(delivery text, OUT stream text, OUT seq bigint)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT m[1], m[2]::bigint FROM regexp_match(delivery, '^(\S+) #([0-9]{1,18}) stored ') AS m
$$;
COMMENT ON FUNCTION quarantine_delivery_position(text) IS 'The stream and sequence of a dead letter''s delivery ("<stream> #<seq> stored <time>"); NULLs for any other form.';

-- The runtime role still may not delete from dead_letters_purged (0027):
-- it may only have this function remove the keys of one stream below a
-- sequence, at most 10,000 a call (the oldest first), and it learns how
-- many went and their sequences, for the audit row it writes in the same
-- transaction.
CREATE FUNCTION quarantine_purged_keys_trim(p_stream text, p_below bigint, p_max integer,
    OUT keys bigint, OUT from_seq bigint, OUT to_seq bigint)
    LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    WITH gone AS (
        DELETE FROM public.dead_letters_purged p USING (
            SELECT k.dead_lettered_at, k.source_key FROM public.dead_letters_purged k
            WHERE k.stream = p_stream AND k.stream_seq < p_below
            ORDER BY k.stream_seq LIMIT least(greatest(p_max, 0), 10000)
        ) k
        WHERE p.dead_lettered_at = k.dead_lettered_at AND p.source_key = k.source_key
        RETURNING p.stream_seq
    )
    SELECT count(*), min(stream_seq), max(stream_seq) FROM gone
$$;
COMMENT ON FUNCTION quarantine_purged_keys_trim(text, bigint, integer) IS 'Removes at most p_max (up to 10,000) purged source keys of stream p_stream below sequence p_below, oldest first; returns how many and their lowest and highest sequence. The caller audits it in the same transaction.';
REVOKE ALL ON FUNCTION quarantine_purged_keys_trim(text, bigint, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quarantine_purged_keys_trim(text, bigint, integer) TO quarantine_runtime;
