DROP TABLE replay_approval_addresses;
