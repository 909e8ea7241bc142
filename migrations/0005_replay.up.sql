-- Replay: requests (one tenant and one policy class each), their frozen
-- items, approvals bound to the intent hash, the job outbox the workers
-- claim, and the ledger of what was published.

CREATE TABLE replay_requests (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    batch              text        NOT NULL,
    tenant             text        NOT NULL,
    class              text        NOT NULL,
    status             text        NOT NULL DEFAULT 'draft',
    requester_issuer   text        NOT NULL,
    requester_subject  text        NOT NULL,
    requester_email    text        NOT NULL DEFAULT '',
    reason             text        NOT NULL DEFAULT '',
    status_reason      text        NOT NULL DEFAULT '',
    policy_version     text        NOT NULL,
    rate               double precision NOT NULL,
    intent_hash        bytea       NOT NULL,
    item_count         integer     NOT NULL,
    skipped_count      integer     NOT NULL DEFAULT 0,
    typed_confirmation text        NOT NULL DEFAULT '',
    payload_edited     boolean     NOT NULL DEFAULT false,
    created_at         timestamptz NOT NULL DEFAULT now(),
    submitted_at       timestamptz,
    approved_at        timestamptz,
    finished_at        timestamptz,
    version            integer     NOT NULL DEFAULT 1,
    CONSTRAINT replay_requests_status_check CHECK (status IN
        ('draft', 'pending_approval', 'approved', 'running', 'done', 'rejected', 'cancelled', 'void')),
    CONSTRAINT replay_requests_class_check CHECK (class IN
        ('rebuildable', 'dedupe', 'same_operation', 'revalidate', 'manual'))
);
CREATE INDEX replay_requests_batch_idx ON replay_requests (batch);
CREATE INDEX replay_requests_pending_idx ON replay_requests (tenant, created_at) WHERE status = 'pending_approval';
COMMENT ON COLUMN replay_requests.batch IS 'Requests made from one selection share it; the confirm page shows them together.';
COMMENT ON COLUMN replay_requests.intent_hash IS 'SHA-256 over tenant, class, policy version, rate and every item (id, msg id, operation id, subject, payload hash, headers). Approvals bind to it.';
COMMENT ON COLUMN replay_requests.rate IS 'Messages per second the workers publish this request at.';

CREATE TABLE replay_items (
    request_id      bigint  NOT NULL REFERENCES replay_requests (id),
    dead_letter_id  bigint  NOT NULL REFERENCES dead_letters (id),
    position        integer NOT NULL,
    msg_id          text    NOT NULL,
    operation_id    text    NOT NULL DEFAULT '',
    correlation_id  text    NOT NULL DEFAULT '',
    subject         text    NOT NULL,
    headers         jsonb   NOT NULL,
    payload         bytea   NOT NULL,
    payload_sha256  bytea   NOT NULL,
    skip_reason     text    NOT NULL DEFAULT '',
    PRIMARY KEY (request_id, dead_letter_id)
);
CREATE INDEX replay_items_dead_letter_idx ON replay_items (dead_letter_id);
COMMENT ON TABLE replay_items IS 'The frozen set of a request: what will be published, exactly. Items with a skip_reason are shown but never published.';

CREATE TABLE replay_approvals (
    request_id        bigint      NOT NULL REFERENCES replay_requests (id),
    approver_issuer   text        NOT NULL,
    approver_subject  text        NOT NULL,
    approver_email    text        NOT NULL DEFAULT '',
    intent_hash       bytea       NOT NULL,
    approved_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (request_id, approver_issuer, approver_subject)
);
COMMENT ON TABLE replay_approvals IS 'One row per person (issuer + subject) per request; a second click is a conflict, not a second approval.';

CREATE SEQUENCE replay_fence_seq;

CREATE TABLE replay_jobs (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    request_id      bigint      NOT NULL REFERENCES replay_requests (id),
    dead_letter_id  bigint      NOT NULL REFERENCES dead_letters (id),
    state           text        NOT NULL DEFAULT 'pending',
    not_before      timestamptz NOT NULL DEFAULT now(),
    attempts        integer     NOT NULL DEFAULT 0,
    lease_owner     text        NOT NULL DEFAULT '',
    lease_until     timestamptz,
    fence           bigint      NOT NULL DEFAULT 0,
    result          text        NOT NULL DEFAULT '',
    pub_stream      text        NOT NULL DEFAULT '',
    pub_seq         bigint      NOT NULL DEFAULT 0,
    duplicate       boolean     NOT NULL DEFAULT false,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT replay_jobs_one_per_item UNIQUE (request_id, dead_letter_id),
    CONSTRAINT replay_jobs_state_check CHECK (state IN
        ('pending', 'claimed', 'unknown', 'published', 'skipped', 'failed', 'blocked', 'cancelled'))
);
CREATE INDEX replay_jobs_ready_idx ON replay_jobs (not_before, id) WHERE state IN ('pending', 'claimed', 'unknown');
CREATE INDEX replay_jobs_request_idx ON replay_jobs (request_id, state);
COMMENT ON TABLE replay_jobs IS 'Outbox: one row per item of an approved request, written in the approval transaction.';
COMMENT ON COLUMN replay_jobs.fence IS 'Fencing token from replay_fence_seq, new at every claim; result writes require it, so a worker whose lease expired records nothing.';
COMMENT ON COLUMN replay_jobs.state IS 'unknown: published but the PubAck was lost or timed out; retried with the same Nats-Msg-Id, never a new one.';

CREATE TABLE replay_ledger (
    job_id          bigint      PRIMARY KEY REFERENCES replay_jobs (id),
    request_id      bigint      NOT NULL,
    dead_letter_id  bigint      NOT NULL,
    tenant          text        NOT NULL,
    class           text        NOT NULL,
    msg_id          text        NOT NULL,
    operation_id    text        NOT NULL DEFAULT '',
    subject         text        NOT NULL,
    stream          text        NOT NULL,
    seq             bigint      NOT NULL,
    duplicate       boolean     NOT NULL,
    published_at    timestamptz NOT NULL DEFAULT now()
);
-- What "already replayed" means, decided here and not by the broker's
-- two-minute duplicate window.
CREATE UNIQUE INDEX replay_ledger_dedupe_key ON replay_ledger (tenant, msg_id) WHERE class = 'dedupe';
CREATE UNIQUE INDEX replay_ledger_operation_key ON replay_ledger (tenant, operation_id) WHERE class = 'same_operation';
CREATE INDEX replay_ledger_msg_idx ON replay_ledger (tenant, msg_id);
COMMENT ON COLUMN replay_ledger.duplicate IS 'The PubAck said Duplicate: JetStream suppressed it as a repeat of the same Nats-Msg-Id (not a fresh publish).';

-- The last identity and groups seen for each person, so execution-time
-- checks can ask whether requester and approvers still hold their roles.
CREATE TABLE user_directory (
    issuer      text        NOT NULL,
    subject     text        NOT NULL,
    email       text        NOT NULL DEFAULT '',
    email_verified boolean  NOT NULL DEFAULT false,
    name        text        NOT NULL DEFAULT '',
    groups      text[]      NOT NULL DEFAULT '{}',
    seen_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (issuer, subject)
);
COMMENT ON TABLE user_directory IS 'Updated at every sign-in; group roles are as of the last sign-in.';
