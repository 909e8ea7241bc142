DROP INDEX replay_ledger_msg_key_idx;
