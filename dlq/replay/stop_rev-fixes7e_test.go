package replay_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevFixes7eTenantStopSkipsRequestARollbackLetsRepublish: defect
// (severity medium). stopEnds decides "a stop changes nothing" from
// MayRepublish, and MayRepublish reads the approvals under the policy as
// it is NOW (PublishApprovals takes the table's knob). stopEnds' comment
// says "the approvals a request needed only grow, so what it says does not
// change back" — false: the policy table is replaced and rolled back
// (`console policy rollback`). A rebuildable request (0 approvers) done
// with problems, one item needing a person, is skipped by the tenant's
// emergency stop while the class's knob says two approvers (neither
// stopped nor listed as left). The policy then goes back to the version
// the request ran under, and one person republishes the item: the request
// runs again after its tenant was stopped. Before fix-stop7 the tenant
// stop cancelled it and a republish was refused (decision closed).
// Expected: a request the emergency stop of its tenant skipped can never
// run again — stop it (or refuse the later republish); i.e. do not decide
// stoppability from a reading of the policy that may change back
// (use only the request's own recorded approvals / class floors).
func TestRevFixes7eTenantStopSkipsRequestARollbackLetsRepublish(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	shipped := b.policy.Load()

	id := b.seedItem(t, "search.index_update", "rev7e-rollback-1", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	testfactory.NeedsPerson(t, b.db.Pool, req.ID)
	r, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	require.Equal(t, replay.StatusDoneWithProblems, r.Status)
	require.Equal(t, replaypolicy.Go, b.replays.MayRepublish(r).Outcome, "under the shipped policy its item may be republished")

	// A new policy version asks two approvers of rebuildable replays.
	text, err := os.ReadFile("../../dev/policy.toml")
	require.NoError(t, err)
	raised := strings.Replace(string(text), "[class.rebuildable]\napprovals = 0", "[class.rebuildable]\napprovals = 2", 1)
	require.NotEqual(t, string(text), raised)
	two, err := replaypolicy.Parse("raised.toml", []byte(raised))
	require.NoError(t, err)
	b.policy.Store(two)

	// The incident: the on-call approver stops the whole tenant.
	stop := replay.StopInput{Reason: "incident 7e", Typed: replaypolicy.StopPhrase}
	res, err := b.replays.StopAll(ctx, "acme", func(replaypolicy.Class) bool { return true }, approver1, stop, quarantine.RequestMeta{})
	require.NoError(t, err)
	t.Logf("tenant stop: stopped %d, left %d", res.Stopped, len(res.Left))

	// The raised policy is rolled back to the version the request ran under.
	b.policy.Store(shipped)

	// One person republishes the item of the stopped tenant's request.
	err = b.replays.Reconcile(ctx, req.ID, id, approver2, replay.ReconcileInput{Choice: replaypolicy.Republish,
		Note: "the index has no entry for it"}, quarantine.RequestMeta{})
	after, rerr := b.replays.Request(ctx, req.ID)
	require.NoError(t, rerr)
	assert.Error(t, err, "a republish after the tenant's emergency stop must be refused; the request is now %s", after.Status)
	assert.NotEqual(t, replay.StatusRunning, after.Status, "the emergency-stopped tenant's request runs again")
	assert.Equal(t, "needs_reconciliation", b.job(t, req.ID, id).State, "its item still waits for a person, not to be published again")
}

// TestRevFixes7eStoppableHidesRunningBehindUnstoppable: defect (severity
// medium). Stoppable reads the 200 newest requests the stoppable query
// selects and only then drops, in Go, the ones done with problems that may
// not republish (stopEnds). When the 200 newest are such requests (a
// mass incident: 200 refunds, one item each as manual asks, all lost their
// PubAck during a NATS outage), an older request that is approved and
// publishing is not listed at all: the emergency stop page then says
// "Nothing is running: no replay of your tenants waits for approval or
// publishes" while it publishes. Expected: the requests a stop would end
// are listed (filter before the limit, e.g. in SQL, or read on until 200
// are kept).
func TestRevFixes7eStoppableHidesRunningBehindUnstoppable(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	running := b.request(t, []int64{b.seedItem(t, "search.index_update", "rev7e-running", nil, "{}")}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, running.Status, "rebuildable: no approver, it publishes at the next claim")
	for i := range 200 {
		id := b.seedItem(t, "orders.refund", fmt.Sprintf("rev7e-refund-%d", i), nil, `{"refund":1}`)
		r := b.request(t, []int64{id}, replay.SubmitInput{Reason: "the refund timed out"})
		in := replay.ApproveInput{IntentHex: r.IntentHex(), Confirmation: fmt.Sprintf("REPLAY rev7e-refund-%d", i)}
		for _, a := range []quarantine.Actor{approver1, approver2} {
			_, err := b.replays.Approve(ctx, r.ID, a, in, quarantine.RequestMeta{})
			require.NoError(t, err)
		}
		testfactory.NeedsPerson(t, b.db.Pool, r.ID)
	}
	still, err := b.replays.Request(ctx, running.ID)
	require.NoError(t, err)
	require.Equal(t, replay.StatusApproved, still.Status, "it may still publish")
	ok, err := b.replays.CanStop(ctx, running.ID)
	require.NoError(t, err)
	require.True(t, ok, "a stop of it is offered on its own page")
	listed, err := b.replays.Stoppable(ctx, []string{"acme"})
	require.NoError(t, err)
	var ids []int64
	for _, r := range listed {
		ids = append(ids, r.ID)
	}
	t.Logf("listed %d, first %v", len(ids), ids[:min(3, len(ids))])
	assert.Contains(t, ids, running.ID, "the approved request that may still publish is listed on the emergency stop page (listed: %d)", len(ids))
}
