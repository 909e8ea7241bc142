-- A retry after an unknown outcome (no PubAck) relies on the target
-- stream's duplicate window only if that stream is the one that saw the
-- first attempt. That was judged by the clocks: the stream's creation (the
-- broker's clock) had to be before first_attempt_at (the database's) less
-- a margin, so a stream made just before a replay sent its item to a
-- person. The publish gate now records, with first_attempt_at, the stream
-- the first attempt was sent to and its creation time as the worker read
-- them; a retry goes only to that very stream (same name, same creation
-- time). Jobs from before, and attempts sent with no stream known, have
-- NULL and are judged by the clocks as before.
ALTER TABLE replay_jobs ADD COLUMN first_stream text, ADD COLUMN first_stream_created timestamptz;
COMMENT ON COLUMN replay_jobs.first_stream IS 'The stream the first attempt (first_attempt_at) was sent to, as the worker read its window then; set and reset with first_attempt_at. NULL: not known (the retry is judged by the clocks).';
COMMENT ON COLUMN replay_jobs.first_stream_created IS 'When first_stream was created, by the broker, as the worker read it then: a stream of that name created at another time is another stream, whose duplicate window never saw the first attempt.';
