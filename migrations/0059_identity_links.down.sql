DROP TABLE replay_request_approvers;
DELETE FROM identity_addresses a WHERE a.verified AND EXISTS (
    SELECT 1 FROM identity_addresses b WHERE b.issuer = a.issuer AND b.subject = a.subject AND b.email = a.email AND NOT b.verified);
ALTER TABLE identity_addresses DROP CONSTRAINT identity_addresses_pkey;
ALTER TABLE identity_addresses ADD PRIMARY KEY (issuer, subject, email);
DROP INDEX identity_addresses_mailbox_idx;
ALTER TABLE identity_addresses DROP COLUMN verified;
ALTER TABLE identity_addresses DROP CONSTRAINT identity_addresses_mailbox_set;
ALTER TABLE identity_addresses DROP COLUMN mailbox;
