-- A dead letter that came back from a replay names the one it was
-- replayed from (Dlq-Replay-Of), and ingest links the claim by what the
-- console sent (dlq/ingest_replayof.go): the replay item and its job, then
-- the origin's message id and generation from its row. Retention removes
-- that row once its period ends, but not the request, item and job: a
-- replay failing again after that was flagged unlinked:replay_of (a false
-- reason: the console did send it) and its generation, the loop guard,
-- restarted at 0. Now retention, when it removes a dead letter, writes
-- onto each replay item naming it what the link needs of it (its tenant,
-- message id and generation), in the run's transaction; ingest reads them
-- when the row is gone. NULL while the dead letter is kept, and for items
-- whose dead letters retention removed before this migration (those claims
-- stay unlinked, as before).
ALTER TABLE replay_items
    ADD COLUMN origin_tenant text,
    ADD COLUMN origin_msg_id text,
    ADD COLUMN origin_generation integer;
COMMENT ON COLUMN replay_items.origin_generation IS 'Set by retention (dlq/retention.go) when it removes the item''s dead letter, with origin_tenant and origin_msg_id: that dead letter''s generation, tenant and message id, which link a later dead letter naming it in Dlq-Replay-Of (dlq/ingest_replayof.go). NULL while the dead letter is kept.';
