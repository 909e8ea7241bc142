-- The replays page's requester filter and "mine first" order
-- (docs/runbook.md, "The Replays page"): each part of the page walks an
-- index newest first instead of reading every request of its tenants.

-- A person's own requests, newest first (the page's first part; "mine").
-- Led by the identity, not the tenant: one person's requests across the
-- tenants they see are few, and the page asks for them by identity.
CREATE INDEX replay_requests_requester_idx ON replay_requests (requester_subject, requester_issuer, id);

-- Requests by the start of the requester's email (the requester filter:
-- a case-insensitive prefix). Emails come from the identity provider,
-- which bounds them (RFC 5321: 254 characters), never from a producer.
CREATE INDEX replay_requests_requester_email_idx ON replay_requests (lower(requester_email) text_pattern_ops);
