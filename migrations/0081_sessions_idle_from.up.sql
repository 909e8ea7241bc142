-- A browser session's idle deadline was the expiry its last writer set:
-- the writing replica's clock plus its own SESSION_IDLE_TIMEOUT, judged
-- on the database's clock. So the replica with the longest timeout decided
-- idle sign-out for all of them (one request there kept the session alive
-- for its timeout on a replica with a shorter one, which never writes an
-- earlier deadline), a lowered timeout left every stored session its old
-- deadline, and a console whose clock ran behind the database's shortened
-- sessions by the skew, to nothing once it reached the timeout (review
-- round 43). The session now keeps when a person's request last moved its
-- idle deadline, on the database's clock (idle_from): each replica ends a
-- session idle longer than its own timeout, and expiry is written on the
-- database's clock. NULL for sessions written before: the next request
-- writes it.
ALTER TABLE sessions ADD COLUMN idle_from timestamptz;
COMMENT ON COLUMN sessions.idle_from IS 'When a person''s request last moved the session''s idle deadline, on the database''s clock: a replica ends a session idle longer than its own SESSION_IDLE_TIMEOUT (authz/session_store.go). NULL: written before migration 0081, judged by expiry alone until its next request.';
