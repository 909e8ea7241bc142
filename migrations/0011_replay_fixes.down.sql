DROP TABLE replay_policy_active;
DROP INDEX replay_jobs_unsettled_idx;
