-- Every class a request's items are classed by (replaypolicy.Classing.Union:
-- item type, target subject, error-class floor, generation limit), as its
-- submit found them. The submit holds the request to the strictest knobs of
-- all of them (replaypolicy.Table.UnionKnobs); from now on so do the
-- approval counts and the worker's approval expiry at execution, which
-- read them here instead of the request's own class alone. Requests
-- submitted before keep '{}': their class alone, as they were judged.
ALTER TABLE replay_requests ADD COLUMN classes text[] NOT NULL DEFAULT '{}';
COMMENT ON COLUMN replay_requests.classes IS 'Every class the request''s items were classed by at submit (the union whose strictest knobs it meets); empty: its class alone.';
