-- Dead letters as received from NATS, one row per DLQ message or captured advisory.

CREATE TABLE dead_letters (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant              text        NOT NULL,
    item_type           text        NOT NULL,
    subject             text        NOT NULL,
    original_subject    text        NOT NULL DEFAULT '',
    msg_id              text        NOT NULL,
    msg_id_derived      boolean     NOT NULL DEFAULT false,
    operation_id        text        NOT NULL DEFAULT '',
    correlation_id      text        NOT NULL DEFAULT '',
    principal           text        NOT NULL DEFAULT '',
    consumer            text        NOT NULL DEFAULT '',
    error               text        NOT NULL DEFAULT '',
    error_class         text        NOT NULL,
    stack               text        NOT NULL DEFAULT '',
    attempts            integer,
    first_failed_at     timestamptz,
    last_failed_at      timestamptz,
    dead_lettered_at    timestamptz NOT NULL,
    received_at         timestamptz NOT NULL DEFAULT now(),
    headers             jsonb       NOT NULL DEFAULT '[]',
    payload             bytea       NOT NULL DEFAULT '',
    payload_sha256      bytea       NOT NULL,
    payload_size        integer     NOT NULL,
    payload_unavailable boolean     NOT NULL DEFAULT false,
    fingerprint         text        NOT NULL,
    malformed           boolean     NOT NULL DEFAULT false,
    malformed_reasons   text[]      NOT NULL DEFAULT '{}',
    status              text        NOT NULL DEFAULT 'quarantined',
    version             integer     NOT NULL DEFAULT 1,
    updated_at          timestamptz NOT NULL DEFAULT now(),
    source_kind         text        NOT NULL,
    source_stream       text        NOT NULL,
    source_seq          bigint      NOT NULL,
    source_consumer     text        NOT NULL DEFAULT '',
    advisory            jsonb,
    CONSTRAINT dead_letters_source_key UNIQUE (source_stream, source_seq, source_consumer),
    CONSTRAINT dead_letters_status_check CHECK (status IN
        ('quarantined', 'replay_requested', 'replaying', 'replayed', 'replay_failed', 'discarded', 'resolved')),
    CONSTRAINT dead_letters_source_kind_check CHECK (source_kind IN ('dlq', 'advisory'))
);

COMMENT ON COLUMN dead_letters.subject IS 'The DLQ subject it arrived on (dlq.<tenant>.<item_type>), or the original subject for advisories.';
COMMENT ON COLUMN dead_letters.msg_id IS 'Identity used on every replay: Dlq-Original-Msg-Id, else the original Nats-Msg-Id, else <stream>:<seq> where it first lived.';
COMMENT ON COLUMN dead_letters.msg_id_derived IS 'True when msg_id was derived from <stream>:<seq> because the producer gave none.';
COMMENT ON COLUMN dead_letters.error_class IS 'Dlq-Error-Class (transient, permanent, schema_invalid, stale_version, unknown_effect, policy), max_deliveries or terminated for advisories, unclassified when absent or invalid.';
COMMENT ON COLUMN dead_letters.dead_lettered_at IS 'When JetStream stored the dead letter (DLQ message timestamp, or advisory timestamp).';
COMMENT ON COLUMN dead_letters.headers IS 'Every header received, as [{"name","value"}]; a value that is not valid UTF-8 or holds NUL is {"name","value":base64,"encoding":"base64"}.';
COMMENT ON COLUMN dead_letters.payload_unavailable IS 'Advisory rows whose original message was gone from its stream when fetched.';
COMMENT ON COLUMN dead_letters.fingerprint IS 'Error group: hash of class, normalised message and top stack frames.';
COMMENT ON COLUMN dead_letters.source_stream IS 'Where this row came from: DLQ stream, or the watched stream for advisories. With source_seq and source_consumer it makes redelivery idempotent.';
COMMENT ON COLUMN dead_letters.version IS 'Bumped on every status change; state transitions check it.';

CREATE INDEX dead_letters_unresolved_age_idx ON dead_letters (tenant, dead_lettered_at)
    WHERE status IN ('quarantined', 'replay_requested', 'replaying', 'replay_failed');

-- Depth counters maintained per statement by triggers, so the dashboard and
-- the depth metric never count(*) the table.
CREATE TABLE dead_letter_counts (
    tenant      text   NOT NULL,
    item_type   text   NOT NULL,
    error_class text   NOT NULL,
    status      text   NOT NULL,
    n           bigint NOT NULL,
    PRIMARY KEY (tenant, item_type, error_class, status)
);

COMMENT ON TABLE dead_letter_counts IS 'Rows of dead_letters per tenant, item type, class and status; kept by statement triggers on dead_letters.';

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
