-- A job deferred by a message not its own (the broker answered Duplicate
-- and kept another message under the id) counted toward suppression at
-- every deferral: after the third it ended suppressed_duplicate,
-- "something else keeps publishing under this id". A broker whose clock
-- runs behind the database's keeps one message's id past the time the
-- workers wait for, so the same message deferred the job again and again,
-- and a replay nothing else competed with ended suppressed (review round
-- 36). The job now records which message deferred it last (stream:seq);
-- a deferral by the same one again is not counted, since only new
-- messages under the id say that something else publishes, and one
-- message holds its id for one window of real time at most. NULL for
-- jobs deferred before this migration, or by an older console: their
-- next deferral counts, as before.
ALTER TABLE replay_jobs ADD COLUMN deferred_by text;
COMMENT ON COLUMN replay_jobs.deferred_by IS 'stream:seq of the message not ours that deferred the job last: a deferral by the same message again does not count toward suppression (deferrals).';
