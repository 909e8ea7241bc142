COMMENT ON TABLE replay_ledger IS NULL;
GRANT UPDATE, DELETE ON replay_ledger TO quarantine_runtime;
