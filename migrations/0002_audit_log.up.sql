-- The audit log: one row per state change or denied attempt, appended in the
-- same transaction as the change (package audit). Rows form a hash chain:
-- each hash covers the row's fields and the previous row's hash, so an edited,
-- inserted or deleted row breaks the chain and `console audit verify` names it.
--
-- The triggers below reject UPDATE, DELETE and TRUNCATE for every role that
-- cannot drop or disable them. Operators should also take the privileges away
-- from the role the console connects as (here "quarantine"; use yours), so a
-- compromised console cannot even try. The table must then be owned by a
-- different role (the one that runs migrations), because an owner can grant
-- itself the privileges back and disable triggers:
--
--   REVOKE UPDATE, DELETE, TRUNCATE ON TABLE audit_log FROM quarantine;
--
-- Nothing here protects against a superuser or the table owner rewriting the
-- whole chain with freshly computed hashes; that is what recording the head
-- hash elsewhere (verify output, export trailers) is for.

CREATE TABLE audit_log (
    seq           bigint      PRIMARY KEY,
    at            timestamptz NOT NULL,
    actor_issuer  text        NOT NULL DEFAULT '',
    actor_subject text        NOT NULL DEFAULT '',
    actor_email   text        NOT NULL DEFAULT '',
    tenant        text        NOT NULL DEFAULT '',
    action        text        NOT NULL,
    object_type   text        NOT NULL DEFAULT '',
    object_id     text        NOT NULL DEFAULT '',
    message_id    text        NOT NULL DEFAULT '',
    operation_id  text        NOT NULL DEFAULT '',
    request_id    text        NOT NULL DEFAULT '',
    reason        text        NOT NULL DEFAULT '',
    outcome       text        NOT NULL,
    before        jsonb,
    after         jsonb,
    remote_addr   text        NOT NULL DEFAULT '',
    user_agent    text        NOT NULL DEFAULT '',
    prev_hash     bytea,
    hash          bytea       NOT NULL,
    CONSTRAINT audit_log_seq_check CHECK (seq >= 1),
    CONSTRAINT audit_log_action_check CHECK (action <> ''),
    CONSTRAINT audit_log_outcome_check CHECK (outcome IN ('ok', 'denied', 'error')),
    CONSTRAINT audit_log_hash_check CHECK (octet_length(hash) = 32),
    -- Only the first entry has no predecessor.
    CONSTRAINT audit_log_prev_hash_check CHECK ((seq = 1) = (prev_hash IS NULL) AND (prev_hash IS NULL OR octet_length(prev_hash) = 32))
);

COMMENT ON TABLE audit_log IS 'Append-only, hash-chained audit log. Written only by package audit (Append), under pg_advisory_xact_lock so seq has no gaps; UPDATE, DELETE and TRUNCATE are rejected by triggers.';
COMMENT ON COLUMN audit_log.seq IS 'Position in the chain: 1, 2, 3, ... without gaps, assigned by the append under an advisory lock (not a sequence, which would leave gaps on rollback).';
COMMENT ON COLUMN audit_log.at IS 'When the event happened: given by the caller, else the database clock when the entry was appended.';
COMMENT ON COLUMN audit_log.actor_issuer IS 'OIDC issuer of the actor; with actor_subject it identifies the person. Empty for the system itself.';
COMMENT ON COLUMN audit_log.actor_subject IS 'OIDC subject (sub) of the actor, stable across email changes.';
COMMENT ON COLUMN audit_log.actor_email IS 'Email of the actor at the time of the event, for people reading the log.';
COMMENT ON COLUMN audit_log.tenant IS 'Tenant the event concerns; empty for events outside any tenant (login, policy table), which only viewers of all tenants see.';
COMMENT ON COLUMN audit_log.action IS 'What was attempted, as a dotted verb such as replay.approve or deadletter.discard.';
COMMENT ON COLUMN audit_log.object_id IS 'Identifier of the object acted on, in the namespace of object_type (a dead letter id, a replay request id, a policy version).';
COMMENT ON COLUMN audit_log.message_id IS 'Original message id (Nats-Msg-Id) of the dead letter concerned, when there is one.';
COMMENT ON COLUMN audit_log.operation_id IS 'Idempotent operation id of the dead letter concerned (Dlq-Operation-Id), when there is one.';
COMMENT ON COLUMN audit_log.request_id IS 'Id of the HTTP request (or job) that made the change, to join with logs.';
COMMENT ON COLUMN audit_log.reason IS 'Why: the operator''s stated reason, or the reason an attempt was denied or failed.';
COMMENT ON COLUMN audit_log.outcome IS 'ok: the change happened; denied: authorisation or policy refused it; error: it was attempted and failed.';
COMMENT ON COLUMN audit_log.before IS 'State of the object before the change, as JSON; NULL when not applicable. Hashed in its canonical form (jsonb text, whitespace removed).';
COMMENT ON COLUMN audit_log.after IS 'State of the object after the change, as JSON; NULL when not applicable. Hashed like before.';
COMMENT ON COLUMN audit_log.prev_hash IS 'hash of the entry seq - 1; NULL only for seq 1.';
COMMENT ON COLUMN audit_log.hash IS 'SHA-256 over the canonical encoding of every other column and prev_hash (see package audit, hash.go); recomputed by `console audit verify`.';

-- The auditor's filters. Most carry seq so that a filter plus the keyset
-- (ORDER BY seq DESC, seq < $cursor) is one index range scan.
CREATE INDEX audit_log_at_idx ON audit_log (at);
CREATE INDEX audit_log_actor_email_idx ON audit_log (actor_email, seq) WHERE actor_email <> '';
CREATE INDEX audit_log_actor_subject_idx ON audit_log (actor_subject, seq) WHERE actor_subject <> '';
CREATE INDEX audit_log_tenant_seq_idx ON audit_log (tenant, seq);
CREATE INDEX audit_log_action_idx ON audit_log (action, seq);
CREATE INDEX audit_log_message_id_idx ON audit_log (message_id, seq) WHERE message_id <> '';
-- object_id first: the message filter matches object_id without object_type.
CREATE INDEX audit_log_object_idx ON audit_log (object_id, object_type, seq);
CREATE INDEX audit_log_outcome_idx ON audit_log (outcome, seq) WHERE outcome <> 'ok';

CREATE FUNCTION audit_log_reject_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only: % is not allowed', TG_OP
        USING ERRCODE = 'insufficient_privilege',
              HINT = 'Audit entries are never changed or removed; append a new entry instead.';
END $$;

CREATE TRIGGER audit_log_no_update_delete BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_reject_change();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_reject_change();
-- ALWAYS: the triggers fire under session_replication_role = replica too, so
-- that setting is no way around them; only the owner disabling them is.
ALTER TABLE audit_log ENABLE ALWAYS TRIGGER audit_log_no_update_delete;
ALTER TABLE audit_log ENABLE ALWAYS TRIGGER audit_log_no_truncate;
