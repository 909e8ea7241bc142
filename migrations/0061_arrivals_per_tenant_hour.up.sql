-- Dead letters per tenant and hour. The dashboard read its rolling "last
-- 24 hours" and its 24-hour chart from the minute rows: 1,440 rows a
-- tenant on every view (4,242 rows summed into 75 tenant-hours, 1.3 ms of
-- the page's batch at 10M rows), and its longer charts from the hours by
-- type and class (one row per hour and combination). Now whole hours come
-- from here (24 rows a tenant for a day, 744 for 31 days) and minutes only
-- for the two partial hours at the ends of the rolling day.
--
-- Kept by triggers on dead_letter_arrivals rather than by the fold's
-- statement, so that every fold adds to it, a console's of an older version
-- during a rolling upgrade included (migrations only add: CheckVersion). The
-- fold writes one dead_letter_arrivals row per tenant, hour, type and class
-- it touched, twice a second at most; ingest writes none. Deletes (the
-- keeper's trim of old hours) change nothing here: arrivals are history,
-- and this table is trimmed on its own.
CREATE TABLE dead_letter_arrivals_tenant_hour (
    tenant text        NOT NULL,
    hour   timestamptz NOT NULL,
    n      bigint      NOT NULL,
    PRIMARY KEY (tenant, hour)
) WITH (fillfactor = 50,
    autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0);
COMMENT ON TABLE dead_letter_arrivals_tenant_hour IS 'Dead letters stored per tenant and hour of dead_lettered_at (UTC): dead_letter_arrivals summed over item types and classes, kept by its triggers. Arrivals are history: status changes and retention do not change them.';
-- The keeper trims hours older than the longest chart.
CREATE INDEX dead_letter_arrivals_tenant_hour_idx ON dead_letter_arrivals_tenant_hour (hour);

-- One statement trigger per event, over its transition tables: a fold's
-- upsert writes each tenant-hour once, whatever number of types and classes
-- it touched in that hour (a row trigger wrote it once per row, a version
-- each). An INSERT ... ON CONFLICT DO UPDATE fires both: the insert's with
-- the rows it inserted, the update's with the rows it updated.
CREATE FUNCTION dead_letter_arrivals_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO dead_letter_arrivals_tenant_hour AS a (tenant, hour, n)
    SELECT tenant, hour, sum(n) FROM inserted GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (tenant, hour) DO UPDATE SET n = a.n + excluded.n;
    RETURN NULL;
END $$;
CREATE FUNCTION dead_letter_arrivals_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO dead_letter_arrivals_tenant_hour AS a (tenant, hour, n)
    SELECT tenant, hour, sum(n) FROM (
        SELECT tenant, hour, n FROM updated
        UNION ALL
        SELECT tenant, hour, -n FROM replaced
    ) d GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (tenant, hour) DO UPDATE SET n = a.n + excluded.n;
    RETURN NULL;
END $$;

-- Under the folders' lock ("QDLFOLD", dlq/counters.go): no fold adds to
-- the hours between the sum below and the triggers.
SELECT pg_advisory_xact_lock(5855889280350307328);
CREATE TRIGGER dead_letter_arrivals_inserted AFTER INSERT ON dead_letter_arrivals
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION dead_letter_arrivals_inserted();
CREATE TRIGGER dead_letter_arrivals_updated AFTER UPDATE ON dead_letter_arrivals
    REFERENCING OLD TABLE AS replaced NEW TABLE AS updated
    FOR EACH STATEMENT EXECUTE FUNCTION dead_letter_arrivals_updated();
INSERT INTO dead_letter_arrivals_tenant_hour (tenant, hour, n)
SELECT tenant, hour, sum(n) FROM dead_letter_arrivals GROUP BY 1, 2;
