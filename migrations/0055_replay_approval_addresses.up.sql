-- Every address an approver gave an approval of a request under, kept for
-- the life of the request. Separation of duties compares each approver as
-- the person behind all of them (invariant 14, "one person is one
-- person"): an approval renewed after it lapsed overwrites its row's
-- approver_email with the address the approver's session has then, and an
-- edit of the payload deletes the request's approvals; either would
-- forget that this identity approved the request under an address
-- another identity of the same person holds, and let that person approve
-- a two-approver request twice (dlq/replay/approve.go, insertApproval).
-- Append-only for the console: a recorded address is never lost.
CREATE TABLE replay_approval_addresses (
    request_id       bigint NOT NULL REFERENCES replay_requests (id),
    approver_issuer  text   NOT NULL,
    approver_subject text   NOT NULL,
    approver_email   text   NOT NULL CHECK (approver_email <> ''), -- an identity without an address is its identity alone
    PRIMARY KEY (request_id, approver_issuer, approver_subject, approver_email)
);
COMMENT ON TABLE replay_approval_addresses IS 'Each address (approver_email) an identity (issuer + subject) approved the request under, written with every approval and never removed (not by a renewal, not by an edit that deletes the approvals): separation of duties compares each approver as all of them (replaypolicy.Request.ApprovedAs).';
REVOKE UPDATE, DELETE ON replay_approval_addresses FROM quarantine_runtime;

-- The addresses the approvals recorded so far; what a renewal or an edit
-- overwrote before this migration is gone (the audit log's replay.approve
-- entries name each approver as they were then).
INSERT INTO replay_approval_addresses (request_id, approver_issuer, approver_subject, approver_email)
    SELECT request_id, approver_issuer, approver_subject, approver_email FROM replay_approvals WHERE approver_email <> ''
    ON CONFLICT DO NOTHING;
