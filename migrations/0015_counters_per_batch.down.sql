-- Back to counters kept by statement triggers (migrations 0001 and 0004).

DROP TABLE dead_letter_deltas;
ALTER TABLE user_sessions RESET (fillfactor);
ALTER TABLE sessions RESET (fillfactor, autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold, autovacuum_vacuum_cost_delay);
ALTER TABLE sessions DROP COLUMN user_session;
ALTER TABLE dead_letter_counts RESET (fillfactor, autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold, autovacuum_vacuum_cost_delay);
ALTER TABLE dead_letter_groups RESET (fillfactor, autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold, autovacuum_vacuum_cost_delay);
ALTER TABLE dead_letter_arrivals_minute RESET (fillfactor, autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold, autovacuum_vacuum_cost_delay);
ALTER TABLE dead_letter_arrivals RESET (fillfactor, autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold, autovacuum_vacuum_cost_delay);
ALTER TABLE dead_letter_groups DROP COLUMN sample_at;

CREATE FUNCTION dead_letter_counts_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        -- Keys are taken in one order so concurrent statements cannot deadlock on them.
        INSERT INTO dead_letter_counts AS c (tenant, item_type, error_class, status, n)
        SELECT tenant, item_type, error_class, status, -count(*)
        FROM old_rows GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
        ON CONFLICT (tenant, item_type, error_class, status) DO UPDATE SET n = c.n + excluded.n;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO dead_letter_counts AS c (tenant, item_type, error_class, status, n)
        SELECT tenant, item_type, error_class, status, count(*)
        FROM new_rows GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
        ON CONFLICT (tenant, item_type, error_class, status) DO UPDATE SET n = c.n + excluded.n;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER dead_letter_counts_insert AFTER INSERT ON dead_letters
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dead_letter_counts_apply();
CREATE TRIGGER dead_letter_counts_update AFTER UPDATE ON dead_letters
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dead_letter_counts_apply();
CREATE TRIGGER dead_letter_counts_delete AFTER DELETE ON dead_letters
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION dead_letter_counts_apply();

CREATE FUNCTION dead_letter_triage_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Every upsert takes its keys in one order (ORDER BY the key), and the
    -- tables in one order, so concurrent statements cannot deadlock.
    IF TG_OP = 'INSERT' THEN
        INSERT INTO dead_letter_arrivals AS a (tenant, hour, item_type, error_class, n)
        SELECT tenant, date_bin('1 hour', dead_lettered_at, TIMESTAMPTZ '2000-01-01 00:00:00+00'), item_type, error_class, count(*)
        FROM new_rows GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
        ON CONFLICT (tenant, hour, item_type, error_class) DO UPDATE SET n = a.n + excluded.n;

        INSERT INTO dead_letter_arrivals_minute AS a (tenant, minute, n)
        SELECT tenant, date_bin('1 minute', dead_lettered_at, TIMESTAMPTZ '2000-01-01 00:00:00+00'), count(*)
        FROM new_rows GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (tenant, minute) DO UPDATE SET n = a.n + excluded.n;

        INSERT INTO dead_letter_groups AS g (tenant, fingerprint, item_type, error_class, n, unresolved, first_seen, last_seen, sample_id)
        SELECT tenant, fingerprint, item_type, min(error_class), count(*),
               count(*) FILTER (WHERE dead_letter_unresolved(status)),
               min(dead_lettered_at), max(dead_lettered_at), max(id)
        FROM new_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (tenant, fingerprint, item_type) DO UPDATE SET
            n = g.n + excluded.n,
            unresolved = g.unresolved + excluded.unresolved,
            first_seen = least(g.first_seen, excluded.first_seen),
            last_seen = greatest(g.last_seen, excluded.last_seen),
            sample_id = greatest(g.sample_id, excluded.sample_id);
    ELSIF TG_OP = 'UPDATE' THEN
        -- Status changes move rows between resolved and unresolved; a change of
        -- the group key (never done by the console) moves them between groups.
        INSERT INTO dead_letter_groups AS g (tenant, fingerprint, item_type, error_class, n, unresolved, first_seen, last_seen, sample_id)
        SELECT tenant, fingerprint, item_type, min(error_class), sum(dn), sum(du), min(at), max(at), max(id)
        FROM (
            SELECT tenant, fingerprint, item_type, error_class, -1 AS dn,
                   -(dead_letter_unresolved(status)::int) AS du, dead_lettered_at AS at, id
            FROM old_rows
            UNION ALL
            SELECT tenant, fingerprint, item_type, error_class, 1,
                   dead_letter_unresolved(status)::int, dead_lettered_at, id
            FROM new_rows
        ) moved
        GROUP BY 1, 2, 3 HAVING sum(dn) <> 0 OR sum(du) <> 0 ORDER BY 1, 2, 3
        ON CONFLICT (tenant, fingerprint, item_type) DO UPDATE SET
            n = g.n + excluded.n,
            unresolved = g.unresolved + excluded.unresolved;
    ELSE
        INSERT INTO dead_letter_groups AS g (tenant, fingerprint, item_type, error_class, n, unresolved, first_seen, last_seen, sample_id)
        SELECT tenant, fingerprint, item_type, min(error_class), -count(*),
               -count(*) FILTER (WHERE dead_letter_unresolved(status)),
               min(dead_lettered_at), max(dead_lettered_at), max(id)
        FROM old_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (tenant, fingerprint, item_type) DO UPDATE SET
            n = g.n + excluded.n,
            unresolved = g.unresolved + excluded.unresolved;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER dead_letter_triage_insert AFTER INSERT ON dead_letters
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dead_letter_triage_apply();
CREATE TRIGGER dead_letter_triage_update AFTER UPDATE ON dead_letters
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dead_letter_triage_apply();
CREATE TRIGGER dead_letter_triage_delete AFTER DELETE ON dead_letters
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION dead_letter_triage_apply();
