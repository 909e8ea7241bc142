DROP TABLE user_directory;
DROP TABLE replay_ledger;
DROP TABLE replay_jobs;
DROP SEQUENCE replay_fence_seq;
DROP TABLE replay_approvals;
DROP TABLE replay_items;
DROP TABLE replay_requests;
