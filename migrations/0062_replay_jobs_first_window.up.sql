-- A retry after an unknown outcome goes only while the target stream's
-- duplicate window still covers the first attempt, so that the broker
-- drops it if the first one landed. The broker forgets an id by the
-- window in force as it goes: a window raised since the first attempt
-- does not bring back an id already forgotten under the shorter one, and
-- a retry judged by the raised window was stored again, a second effect
-- shown replayed. The publish gate now records, with first_stream, the
-- window the first attempt was judged by; a retry's coverage is judged by
-- the shorter of that and the window read now. NULL: not known (jobs from
-- before), judged by the window read now, as before.
ALTER TABLE replay_jobs ADD COLUMN first_stream_window interval;
COMMENT ON COLUMN replay_jobs.first_stream_window IS 'The duplicate window of first_stream as the worker read it when it judged the first attempt; set and reset with first_stream. A retry is covered by the shorter of this and the window read then.';
