-- One person is every name the console knows them by (invariant 14 over
-- time). Until now the addresses kept were those an identity approved one
-- request under (replay_approval_addresses, 0055): the address the
-- requester drafted, submitted or edited under, and the one an approver
-- approved an earlier request under ("request again" starts a new
-- request), were compared nowhere, so a person whose old address another
-- identity of theirs now holds could approve their own request, or
-- approve one request twice. The addresses are now kept per identity, for
-- every request and every judgement: each address the console saw an
-- identity with (each sign-in and refresh, draft, submit, payload edit,
-- approval, rejection, cancel and settle), and separation of duties
-- compares each person of a request, and the actor, as their identity
-- with all of them (replaypolicy.Request.KnownAs).
-- Append-only for the console: an address once seen is never forgotten.
CREATE TABLE identity_addresses (
    issuer     text        NOT NULL,
    subject    text        NOT NULL,
    email      text        NOT NULL CHECK (email <> ''), -- an identity without an address is its identity alone
    first_seen timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (issuer, subject, email)
);
COMMENT ON TABLE identity_addresses IS 'Each address (email) the console has seen an identity (issuer + subject) with: at sign-in and refresh (the directory), and with each replay action it took. Never removed: separation of duties compares each person as their identity with every one of them (replaypolicy.Request.KnownAs).';
COMMENT ON COLUMN identity_addresses.first_seen IS 'When the console first saw the identity with the address (for rows of this migration: when it ran).';
REVOKE UPDATE, DELETE ON identity_addresses FROM quarantine_runtime;

-- What is known so far: the directory (each identity's last address), the
-- requests (the address each was drafted under), the approvals and the
-- addresses approvals were given under, and the audit log (each address
-- an actor acted under, the submits and edits among them).
INSERT INTO identity_addresses (issuer, subject, email)
    SELECT issuer, subject, email FROM user_directory WHERE email <> ''
    UNION SELECT requester_issuer, requester_subject, requester_email FROM replay_requests WHERE requester_email <> ''
    UNION SELECT approver_issuer, approver_subject, approver_email FROM replay_approvals WHERE approver_email <> ''
    UNION SELECT approver_issuer, approver_subject, approver_email FROM replay_approval_addresses
    UNION SELECT actor_issuer, actor_subject, actor_email FROM audit_log
        WHERE actor_email <> '' AND actor_issuer <> '' AND actor_subject <> ''
    ON CONFLICT DO NOTHING;

-- Every row of it is in identity_addresses, which every request reads.
DROP TABLE replay_approval_addresses;
