package replay

import (
	"context"
	"fmt"
)

// A panic met outside any one job of a claim of several (while the claim
// is loaded, judged or recorded as a whole) can be blamed on none of
// them, and a claim of the same jobs would meet it again at every lease,
// holding back every job of it, for ever. The worker narrows it down
// instead: it claims the jobs of such a claim again in two halves, each a
// claim of its own (claimSome), and each half that panics outside any one
// job in halves again, down to a claim of one job, on which the panic is
// then blamed and counted as the poison rule says (failedOn). The jobs of
// a half that did not panic go on as any claim's do. Rounds, not leases:
// a claim that panicked lets go of its jobs at once (release), so the
// search takes about two claims per halving (22 for a claim of 2,048),
// and the jobs of the claim wait that long, not a lease each time.
//
// A panic that is not any job's (a bug met on every claim) is narrowed
// down to a job all the same, and after replaypolicy.MaxWorkerFailures
// such claims that job goes to a person, as a claim of that job alone
// always did: a claim of one job that panics is that job's. The
// narrowing is this worker's, in memory: another worker, or this one
// restarted, meets the panic once on a claim of its own and narrows it
// down itself.

// narrowing is what is left of the worker's search for the job a panic
// came from: groups of jobs, each to be claimed as a claim of its own,
// the first next.
type narrowing struct {
	groups [][]int64
	// claimed: this round's claim was of the first group (claim sets it).
	claimed bool
}

// next is the group the next claim is of (nil: a claim of any due jobs).
func (n *narrowing) next() []int64 {
	if len(n.groups) == 0 {
		return nil
	}
	return n.groups[0]
}

// done drops the group this round claimed, if it claimed one: what could
// be learnt of it is learnt (it met no panic outside any one job, or the
// panic was blamed on a job, or none of it was left to claim).
func (n *narrowing) done() {
	if n.claimed {
		n.groups = n.groups[1:]
	}
	n.claimed = false
	if len(n.groups) == 0 {
		n.groups = nil
	}
}

// split drops the group this round claimed, if any, and puts the halves
// of claim (the jobs of a claim of several that panicked outside any one
// job) before the rest, the first half first.
func (n *narrowing) split(claim []*job) {
	n.done()
	ids := claimIDs(claim)
	h := len(ids) / 2
	n.groups = append([][]int64{ids[:h:h], ids[h:]}, n.groups...)
}

// releaseJobs ends the lease of the jobs ($1, with their fences $2) of a
// claim that panicked, as the clock ends a crashed worker's: they stay
// claimed, and whoever claims them next (this worker narrowing the panic
// down, or any other) takes them over, fenced, and judges whether a
// publish of them may have landed, as after a crash. It changes no job's
// state and so writes no audit row, as a lease that runs out writes none.
const releaseJobs = `UPDATE replay_jobs j SET lease_until = now(), updated_at = now()
FROM unnest($1::bigint[], $2::bigint[]) AS k(id, fence)
WHERE j.id = k.id
  AND j.fence = k.fence    -- not a job taken over since
  AND j.state = 'claimed'  -- nor one recorded or ended since`

// release lets go at once of the jobs of a claim that panicked, but
// kept (the job the panic was blamed on, left to its lease: counted, it
// is claimed again a lease later, not at once). A worker that panicked
// trusts nothing the claim held; waiting for the lease would only hold
// the jobs back: another worker, or this one narrowing the panic down,
// may take them now.
func (w *Worker) release(ctx context.Context, claim []*job, kept *job) error {
	ids, fences := make([]int64, 0, len(claim)), make([]int64, 0, len(claim))
	for _, j := range claim {
		if j != kept {
			ids, fences = append(ids, j.id), append(fences, j.fence)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.RecordTimeout)
	defer cancel()
	if _, err := w.svc.pool.Exec(ctx, releaseJobs, ids, fences); err != nil {
		return fmt.Errorf("release the %d replay jobs of a claim that panicked: %w", len(ids), err)
	}
	return nil
}

// claimIDs are the ids of claim's jobs, in order.
func claimIDs(claim []*job) []int64 {
	ids := make([]int64, len(claim))
	for i, j := range claim {
		ids[i] = j.id
	}
	return ids
}
