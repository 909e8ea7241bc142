DROP INDEX replay_requests_draft_idx;
UPDATE replay_items i SET payload = d.payload FROM dead_letters d WHERE d.id = i.dead_letter_id AND i.payload IS NULL;
ALTER TABLE replay_items DROP COLUMN edited_at, DROP COLUMN edit_reason, ALTER COLUMN payload SET NOT NULL;
ALTER TABLE replay_items DROP CONSTRAINT replay_items_verdict_reason_check, DROP CONSTRAINT replay_items_verdict_check,
    DROP COLUMN verdict_check, DROP COLUMN verdict;
DROP INDEX replay_items_one_open_request;
ALTER TABLE replay_items DROP COLUMN held;
