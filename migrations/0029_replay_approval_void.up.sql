-- An approval counts only while its approver still holds the right to
-- approve replays of the request's class in its tenant. The approval that
-- would complete a request first asks, for each earlier approver, whether
-- they still do; one who lost the right (a binding removed, a group gone at
-- a refresh, signed out everywhere) has their approval voided, in that
-- transaction and audited (replay.approval.voided): it no longer counts,
-- and the request waits for another approver. The row stays (who approved
-- what, and when, is history); approving again once the right is back
-- renews it and clears the mark.
ALTER TABLE replay_approvals ADD COLUMN voided_at timestamptz, ADD COLUMN void_reason text NOT NULL DEFAULT '';
COMMENT ON COLUMN replay_approvals.voided_at IS 'When the approval stopped counting because its approver lost the right to approve (dlq/replay/approve.go, voidLostApprovals); NULL while it counts. A renewed approval clears it.';
COMMENT ON COLUMN replay_approvals.void_reason IS 'Why the approval was voided (who no longer may approve what, where); empty while it counts.';
