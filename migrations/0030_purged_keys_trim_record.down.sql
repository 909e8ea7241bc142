CREATE OR REPLACE FUNCTION quarantine_purged_keys_trim(p_stream text, p_below bigint, p_max integer,
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
DROP TABLE dead_letters_purged_trims;
