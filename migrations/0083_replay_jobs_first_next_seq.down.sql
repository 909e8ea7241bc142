ALTER TABLE replay_jobs DROP COLUMN first_stream_next_seq;
