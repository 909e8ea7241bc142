-- The replays page (docs/replay.md, "The replays page"): who closed a
-- request (rejected or cancelled it), how many approvals it needs, and an
-- index for the page's keyset paging within tenants.

ALTER TABLE replay_requests
    ADD COLUMN closed_by_issuer         text    NOT NULL DEFAULT '',
    ADD COLUMN closed_by_subject        text    NOT NULL DEFAULT '',
    ADD COLUMN closed_by_email          text    NOT NULL DEFAULT '',
    ADD COLUMN closed_by_email_verified boolean NOT NULL DEFAULT false,
    ADD COLUMN approvals_needed         integer NOT NULL DEFAULT 0;
COMMENT ON COLUMN replay_requests.closed_by_subject IS 'Who rejected or cancelled the request (an emergency stop cancels it too); empty while it is open and for requests that ended on their own. status_reason says why.';
COMMENT ON COLUMN replay_requests.approvals_needed IS 'The approvals the replay rules ask of the request (replaypolicy.Require: the class''s, raised by an edited payload or an item''s error class), set when it is submitted and when a payload is edited. The count of approvals so far is judged by the rules from replay_approvals.';

-- Requests made before this migration: who closed them is in the audit log
-- (replay.reject, replay.cancel, replay.stop); the approvals their class
-- asks for now, at least one for an edited payload.
UPDATE replay_requests SET approvals_needed = CASE class WHEN 'manual' THEN 2 WHEN 'same_operation' THEN 1 WHEN 'revalidate' THEN 1
    ELSE CASE WHEN payload_edited THEN 1 ELSE 0 END END;

CREATE INDEX replay_requests_tenant_id_idx ON replay_requests (tenant, id);
