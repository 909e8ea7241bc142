-- The replays page's status and class filters, and the dashboard's count of
-- requests done with problems, had no index: a page of a rare ended status
-- (rejected, cancelled, void, done_with_problems) or of a class read every
-- request of the viewer's tenants newest first and dropped all but the few
-- it showed (29,995 of 30,000 to show five), and its counts read them
-- again; the dashboard's "done with problems in the last 7 days", sent with
-- every dashboard view, read them all to count none
-- (TestRevReplays24RareEndedStatusOrClassReadsEveryRequest). The page's
-- statement names only the filters it is given (replay.listSelectionOf),
-- a status as a literal, so each of these serves the statements it fits.

-- A tenant's requests of one status, newest first: a page of a status is
-- read in id order from the first row it shows to the last (the page's own
-- order), however rare the status. Pending approval and draft have partial
-- indexes of their own, by time, for the lists that judge them.
CREATE INDEX replay_requests_tenant_status_idx ON replay_requests (tenant, status, id);

-- A tenant's requests of one class, newest first (the class filter).
CREATE INDEX replay_requests_tenant_class_idx ON replay_requests (tenant, class, id);

-- The requests done with problems, by tenant and by when they were
-- submitted (made, for one never submitted), as the replays page's "from"
-- bound reads them: the dashboard counts those of the last 7 days
-- (replay.ProblemsSince) with every view, and they only grow, so a count
-- led by (tenant, status, id) would read a tenant's every one ever.
CREATE INDEX replay_requests_problems_idx ON replay_requests (tenant, (coalesce(submitted_at, created_at)))
    WHERE status = 'done_with_problems';

-- Their cost: replay_requests holds one row per replay request a person
-- made (a few a day, a few thousand a year), not one per message, and a
-- request changes status a handful of times in its life; three more index
-- entries per row (a status change moves its entry in the first; the
-- partial one takes only requests that end with problems) are a small
-- write cost against a page or a dashboard view that read the whole table.

COMMENT ON INDEX replay_requests_tenant_status_idx IS 'The replays page''s status filter: a tenant''s requests of one status newest first (replay.Service.List, Counts).';
COMMENT ON INDEX replay_requests_tenant_class_idx IS 'The replays page''s class filter: a tenant''s requests of one class newest first (replay.Service.List, Counts).';
COMMENT ON INDEX replay_requests_problems_idx IS 'The dashboard''s count of requests done with problems since a time (replay.Attention), by when each was submitted.';
