-- quarantine_purged_keys_trim (migration 0028) is how the runtime role
-- removes kept source keys, and it cannot tell whether their messages are
-- gone: it trusts p_below, which only the keeper's reading of the stream
-- justifies. A runtime login may name any stream and any sequence, and so
-- remove every key that carries a stream (those without one stay), a
-- batch a call; and the audit row of each removal is written by the
-- caller, which may not write it. The database cannot ask NATS, so it
-- cannot check p_below; what it can do is keep its own record: each call
-- that removes keys now adds a row to dead_letters_purged_trims (stream,
-- the p_below it was given, how many keys and their sequences, who and
-- when), which the runtime role may read and never change. The keeper
-- still writes its audit row (retention.trim_keys) in the same
-- transaction; a removal without one stands out against this table.
CREATE TABLE dead_letters_purged_trims (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    trimmed_at timestamptz NOT NULL DEFAULT now(),
    by_role text NOT NULL DEFAULT session_user,
    stream text NOT NULL,
    below bigint NOT NULL,
    keys bigint NOT NULL,
    from_seq bigint NOT NULL,
    to_seq bigint NOT NULL
);
COMMENT ON TABLE dead_letters_purged_trims IS 'One row per call of quarantine_purged_keys_trim that removed kept source keys: the stream and the p_below it was given (trusted, not checked: the database cannot read the stream), how many keys went and their lowest and highest sequence, the login (session_user) and when. Written only by that function; the runtime role may only read it. The keeper also audits each removal (retention.trim_keys).';
REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON dead_letters_purged_trims FROM quarantine_runtime;
GRANT SELECT ON dead_letters_purged_trims TO quarantine_runtime;

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
    ), removed AS (
        SELECT count(*) AS n, min(stream_seq) AS lo, max(stream_seq) AS hi FROM gone
    ), recorded AS (
        INSERT INTO public.dead_letters_purged_trims (stream, below, keys, from_seq, to_seq)
        SELECT p_stream, p_below, r.n, r.lo, r.hi FROM removed r WHERE r.n > 0
    )
    SELECT n, lo, hi FROM removed
$$;
COMMENT ON FUNCTION quarantine_purged_keys_trim(text, bigint, integer) IS 'Removes at most p_max (up to 10,000) purged source keys of stream p_stream below sequence p_below, oldest first, and records the removal in dead_letters_purged_trims; returns how many and their lowest and highest sequence. p_below is trusted, not checked (the database cannot read the stream): the runtime role may remove any key that carries a stream, never one without, and never unrecorded. The keeper (dlq/retention_keys.go) passes the first sequence the stream held at its previous pass and audits each removal in the same transaction.';
