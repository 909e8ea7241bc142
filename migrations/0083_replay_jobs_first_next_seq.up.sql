-- A retry after a lost PubAck relies on the target stream's duplicate
-- window holding its first attempt's id. A restarted broker rebuilds that
-- window from the messages its streams still hold: a first attempt that
-- was stored, then removed (deleted or purged by a person, or the
-- unsynced tail of a file store lost in a crash) after a consumer may
-- have applied it, is forgotten, and the retry is stored as new and was
-- shown replayed (review round 44b). The publish gate now records, with
-- first_stream, the sequence that stream would store its next message at
-- as the worker read it: a retry stored as new past it, in a stream that
-- no longer holds every message between, is left for a person.
ALTER TABLE replay_jobs ADD COLUMN first_stream_next_seq bigint;
COMMENT ON COLUMN replay_jobs.first_stream_next_seq IS 'The sequence first_stream would store its next message at (its last + 1) as the worker read it when it judged the first attempt; set and reset with first_stream. NULL: not known (a retry stored as new is judged without it). The first attempt, had it landed, was stored at it or after it.';
