-- A request's approval holds under the activation of its policy version
-- it was given in. A policy change voids it, and a rollback to that
-- version later (console policy rollback) must not revive it. The workers
-- told so by comparing the approval's time with other versions'
-- activation times (review round 35), which an approval committed while
-- another version's activation waited for its locks, or dated by a
-- console clock behind the database's, could get wrong. The approval now
-- records the activation it was given under: the version's activated_at
-- (replay_policy_versions) when it was approved; a later activation of
-- the version (a rollback) changes that, and the approval is then stale.
-- NULL for requests approved before this migration (judged by time, as
-- before) and for one whose version was never recorded active.
ALTER TABLE replay_requests ADD COLUMN policy_activated_at timestamptz;
COMMENT ON COLUMN replay_requests.policy_activated_at IS 'When its policy version had last been made active when the request was approved (replay_policy_versions.activated_at): the approval holds only while that activation does.';
