-- As migration 0055 left it: the addresses each approval was given under,
-- per request (what a renewal or an edit overwrote since is gone).
CREATE TABLE replay_approval_addresses (
    request_id       bigint NOT NULL REFERENCES replay_requests (id),
    approver_issuer  text   NOT NULL,
    approver_subject text   NOT NULL,
    approver_email   text   NOT NULL CHECK (approver_email <> ''),
    PRIMARY KEY (request_id, approver_issuer, approver_subject, approver_email)
);
COMMENT ON TABLE replay_approval_addresses IS 'Each address (approver_email) an identity (issuer + subject) approved the request under, written with every approval and never removed (not by a renewal, not by an edit that deletes the approvals): separation of duties compares each approver as all of them (replaypolicy.Request.ApprovedAs).';
REVOKE UPDATE, DELETE ON replay_approval_addresses FROM quarantine_runtime;
INSERT INTO replay_approval_addresses (request_id, approver_issuer, approver_subject, approver_email)
    SELECT request_id, approver_issuer, approver_subject, approver_email FROM replay_approvals WHERE approver_email <> ''
    ON CONFLICT DO NOTHING;
DROP TABLE identity_addresses;
