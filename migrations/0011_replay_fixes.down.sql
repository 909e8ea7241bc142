DROP INDEX replay_jobs_unsettled_idx;
