-- A job a worker left waiting for a worker with a setting it lacks (its
-- REPLAY_SUBJECT_ALLOW refused the subject, it has no REVALIDATE_SUBJECT)
-- waits until its approval's expiry, then is blocked. Only a worker that
-- lacks the setting judged that, and a worker with an empty subject list
-- claims nothing: a setting emptied on every process, then given back
-- weeks later, let the first worker that had it publish the job on an
-- approval long expired (review round 43). The job now keeps the check
-- it waited for ('subject', 'no-revalidation-service'; '' when it never
-- waited for a setting, or a worker that has the setting took it before
-- the expiry: its wait ended), and whichever worker claims it after its
-- approval's expiry blocks it.
ALTER TABLE replay_jobs ADD COLUMN waited_for text NOT NULL DEFAULT '';
COMMENT ON COLUMN replay_jobs.waited_for IS 'The check (replaypolicy.CheckSubject, CheckNoRevalidator) of a setting a worker lacked that the job waited for; once its approval''s expiry passed, any worker blocks it. '''' when it never waited for one, or a worker that had the setting took it before then (or a person republished it).';
-- Jobs waiting for such a worker when this runs: a worker of the release
-- before says so in their result (its words, replaypolicy.JudgeJob and
-- JudgeRevalidation), and nothing else does.
UPDATE replay_jobs SET waited_for = 'subject'
WHERE state IN ('pending', 'deferred', 'unknown', 'claimed')
  AND result LIKE '%the job waits for a worker whose setting allows it%';
UPDATE replay_jobs SET waited_for = 'no-revalidation-service'
WHERE state IN ('pending', 'deferred', 'unknown', 'claimed')
  AND result LIKE '%no revalidation subject is configured on this worker%the job waits for a worker that has it%';
