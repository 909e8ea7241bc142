-- One person is every name the console knows them by, not only the names
-- of the identities a request reads (invariant 14 across identities).
-- Until now a request's people were its requester's and its approvers'
-- identities with the addresses each was seen with (0057): an account
-- outside the request that links two of them (seen with one's address and
-- then with the other's) was never read, so one person's two accounts
-- approved a manual request twice, or the requester approved their own
-- request, and a payload edit, which deletes the approvals, made the
-- linking approver an outsider too. Now the console follows the links in
-- the database (dlq/replay, knownAsOf): from each person's identity to
-- every address it was seen with, by its mailbox key, to every other
-- identity seen with that mailbox, and on.
--
-- mailbox is the key it follows: replaypolicy.Mailbox(email), the one
-- normalization the rules compare addresses with. SQL cannot compute it
-- (Unicode compatibility form, IDNA, case folding): the console writes it
-- with each row, and `console migrate` fills it, after this file, for the
-- rows written before (migrations.fillMailboxes), the backfill below among
-- them. A row without one links nothing; the check at the end keeps every
-- row written after this file from being one.
ALTER TABLE identity_addresses ADD COLUMN mailbox text;
COMMENT ON COLUMN identity_addresses.mailbox IS 'replaypolicy.Mailbox(email): the address as separation of duties compares it. Links between identities are followed by it. Written by the console with each row; filled by `console migrate` for rows from before migration 0059.';

-- verified: the provider vouched for the address when the console saw the
-- identity with it. Beyond the request's own people (and the actor
-- judged), a link is followed only through addresses seen verified: an
-- address merely claimed (at a provider that does not verify) makes its
-- own identity match it, as before, but does not join two other people
-- into one (anyone could otherwise claim two strangers' addresses and take
-- from each the right to approve the other's requests). Seen verified and
-- seen unverified are two rows (the runtime role never updates a row:
-- append-only, as 0057 made it).
ALTER TABLE identity_addresses ADD COLUMN verified boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN identity_addresses.verified IS 'true: the provider said the address is verified (email_verified) when the console saw the identity with it. Outside a request''s own people, links are followed only through such rows.';
ALTER TABLE identity_addresses DROP CONSTRAINT identity_addresses_pkey;
ALTER TABLE identity_addresses ADD PRIMARY KEY (issuer, subject, email, verified);
-- The step from an address to the other identities seen verified with it.
CREATE INDEX identity_addresses_mailbox_idx ON identity_addresses (mailbox) INCLUDE (issuer, subject) WHERE verified;

-- What is known to have been verified: the directory's last word on each
-- identity, and the approvals' and requests' own records.
INSERT INTO identity_addresses (issuer, subject, email, verified)
    SELECT issuer, subject, email, true FROM user_directory WHERE email <> '' AND email_verified
    UNION SELECT requester_issuer, requester_subject, requester_email, true FROM replay_requests
        WHERE requester_email <> '' AND requester_email_verified
    UNION SELECT approver_issuer, approver_subject, approver_email, true FROM replay_approvals
        WHERE approver_email <> '' AND approver_email_verified
    ON CONFLICT DO NOTHING;

-- Everyone who ever approved a request stays one of its people: an edit of
-- its payload deletes its approvals (they approved another intent), and
-- with them went the approver whose addresses linked two others of them.
CREATE TABLE replay_request_approvers (
    request_id       bigint NOT NULL REFERENCES replay_requests (id),
    approver_issuer  text   NOT NULL,
    approver_subject text   NOT NULL,
    PRIMARY KEY (request_id, approver_issuer, approver_subject)
);
COMMENT ON TABLE replay_request_approvers IS 'Each identity that ever approved the request, written with each approval and never removed (not by an edit that deletes the approvals, not by a renewal): separation of duties takes each of them as a person of the request (replaypolicy.Request.KnownAs).';
REVOKE UPDATE, DELETE ON replay_request_approvers FROM quarantine_runtime;

-- Who approved so far: the approvals standing, and every approval the
-- audit log recorded (an edit deleted the others).
INSERT INTO replay_request_approvers (request_id, approver_issuer, approver_subject)
    SELECT request_id, approver_issuer, approver_subject FROM replay_approvals
    UNION SELECT r.id, l.actor_issuer, l.actor_subject
        FROM audit_log l JOIN replay_requests r ON l.object_id = r.id::text
        WHERE l.action = 'replay.approve' AND l.object_type = 'replay_request' AND l.outcome = 'ok'
          AND l.actor_issuer <> '' AND l.actor_subject <> ''
    ON CONFLICT DO NOTHING;

-- Every row from now on comes with its key; those above get theirs from
-- migrations.fillMailboxes (NOT VALID: they are not checked).
ALTER TABLE identity_addresses ADD CONSTRAINT identity_addresses_mailbox_set CHECK (mailbox IS NOT NULL) NOT VALID;
