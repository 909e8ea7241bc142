DROP TABLE retention_terms_contents;
DROP TABLE replay_policy_contents;
