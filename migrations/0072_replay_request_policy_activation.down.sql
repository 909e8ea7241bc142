ALTER TABLE replay_requests DROP COLUMN policy_activated_at;
