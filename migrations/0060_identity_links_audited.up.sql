-- The addresses seen verified before migration 0059 (invariant 14 across
-- identities, for what happened before the upgrade). 0059 follows links
-- between identities past a request's people only through addresses seen
-- verified, and kept as verified only the directory's last word on each
-- identity, the requests' and the approvals'. Every other address seen
-- before it (each earlier sign-in and refresh, each action: 0057 took them
-- from the audit log) was left as merely claimed, though the audit log
-- says whether the provider verified it (actor_email_verified, of every
-- sign-in and every audited action since 0006). So an account that signed
-- in verified as one person's address and later as another's linked
-- nobody after the upgrade: the person's third account approved their own
-- request, or their two approvals counted twice, where the same history
-- after 0059 refuses it. Here every address the audit log saw verified
-- becomes a verified row too.
--
-- The mailbox key is what `console migrate` fills after the SQL
-- (migrations.fillMailboxes): the check that every new row comes with one
-- (0059) is set aside for this insert and put back as it was (NOT VALID:
-- rows before it are not checked).
ALTER TABLE identity_addresses DROP CONSTRAINT identity_addresses_mailbox_set;
INSERT INTO identity_addresses (issuer, subject, email, verified)
    SELECT DISTINCT actor_issuer, actor_subject, actor_email, true FROM audit_log
        WHERE actor_email_verified AND actor_email <> '' AND actor_issuer <> '' AND actor_subject <> ''
    ON CONFLICT DO NOTHING;
ALTER TABLE identity_addresses ADD CONSTRAINT identity_addresses_mailbox_set CHECK (mailbox IS NOT NULL) NOT VALID;
