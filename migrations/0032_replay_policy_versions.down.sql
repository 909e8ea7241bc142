DROP TABLE replay_policy_versions;
