-- The ledger's "already replayed" question for a message id on a subject
-- is asked in every tenant (dlq/replay/ledger.go, replayedByMsg): two
-- tenants may replay to one subject, and the broker's duplicate window is
-- no tenant's. replay_ledger_msg_idx leads with the tenant; this one finds
-- the rows of a message id by the key of the whole id.
CREATE INDEX replay_ledger_msg_key_idx ON replay_ledger (quarantine_key(msg_id));
COMMENT ON INDEX replay_ledger_msg_key_idx IS 'Replays of a message id in any tenant, by the SHA-256 of the whole id (replayedByMsg: a subject is no tenant''s).';
