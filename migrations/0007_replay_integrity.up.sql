-- Replay integrity (docs/replay.md): a dead letter is in at most one open
-- request, every item carries the rules' last verdict, payloads are copied
-- only when edited, and separation of duties knows verified emails.

-- An item holds its dead letter from the submit of its request until its
-- job ends or the request closes; the unique index makes "one open request
-- per dead letter" a constraint, not a check.
ALTER TABLE replay_items ADD COLUMN held boolean NOT NULL DEFAULT false;
-- Existing open requests keep what they hold; where two held one dead
-- letter (which this migration exists to prevent), the older one keeps it
-- and the other's item is blocked when it is approved or executed.
UPDATE replay_items i SET held = true
FROM (
    SELECT DISTINCT ON (i.dead_letter_id) i.request_id, i.dead_letter_id
    FROM replay_items i JOIN replay_requests r ON r.id = i.request_id
    WHERE r.status IN ('pending_approval', 'approved', 'running') AND i.skip_reason = ''
      AND NOT EXISTS (SELECT 1 FROM replay_jobs j WHERE j.request_id = i.request_id AND j.dead_letter_id = i.dead_letter_id
                      AND j.state IN ('published', 'skipped', 'failed', 'blocked', 'cancelled'))
    ORDER BY i.dead_letter_id, i.request_id
) h
WHERE i.request_id = h.request_id AND i.dead_letter_id = h.dead_letter_id;
CREATE UNIQUE INDEX replay_items_one_open_request ON replay_items (dead_letter_id) WHERE held;
COMMENT ON COLUMN replay_items.held IS 'true while this item''s request holds the dead letter: from submit until the item''s job ends or the request closes. At most one held item per dead letter (replay_items_one_open_request).';

-- What the replay rules said of the item when it was last judged (draft,
-- submit): go, block or done, the check that decided (replaypolicy.Check*)
-- and, in skip_reason, the sentence shown to people.
ALTER TABLE replay_items ADD COLUMN verdict text NOT NULL DEFAULT 'go',
    ADD COLUMN verdict_check text NOT NULL DEFAULT '';
UPDATE replay_items SET verdict = 'block' WHERE skip_reason <> '';
ALTER TABLE replay_items ADD CONSTRAINT replay_items_verdict_check CHECK (verdict IN ('go', 'block', 'done')),
    ADD CONSTRAINT replay_items_verdict_reason_check CHECK ((verdict = 'go') = (skip_reason = ''));
COMMENT ON COLUMN replay_items.skip_reason IS 'Why the rules leave the item out (verdict block or done); empty for an item that goes.';

-- Payloads are copied only for edited items; the others are read from the
-- dead letter when published, and must still hash to payload_sha256.
ALTER TABLE replay_items ALTER COLUMN payload DROP NOT NULL,
    ADD COLUMN edit_reason text NOT NULL DEFAULT '',
    ADD COLUMN edited_at timestamptz;
UPDATE replay_items i SET payload = NULL
FROM dead_letters d WHERE d.id = i.dead_letter_id AND i.payload IS NOT NULL AND i.payload_sha256 = d.payload_sha256;
COMMENT ON COLUMN replay_items.payload IS 'The edited payload, set only when the requester edited it (with edit_reason); NULL: the dead letter''s own payload is sent.';

-- Drafts expire (REPLAY_DRAFT_TTL): the sweeper finds them by age.
CREATE INDEX replay_requests_draft_idx ON replay_requests (created_at) WHERE status = 'draft';
