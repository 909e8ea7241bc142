-- A job whose outcome nobody can know waits for a person (Reconcile); one
-- settled "not applied, republish" is published again, and may come back
-- to wait for a person about that attempt. settled counts the settlements,
-- so that a reconcile form carries the episode it was drawn in and a
-- decision about one attempt never settles a later one nobody showed it.
ALTER TABLE replay_jobs ADD COLUMN settled integer NOT NULL DEFAULT 0;
COMMENT ON COLUMN replay_jobs.settled IS 'How many times a person settled the job''s unknown outcome (Reconcile): the episode a reconcile form was drawn in. A settlement is taken only in the episode its form showed.';
