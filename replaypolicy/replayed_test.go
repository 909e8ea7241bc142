package replaypolicy

import (
	"strings"
	"testing"
)

// TestReplayedIdentityByClass judges an item whose message id, or whose
// operation id, the replay ledger holds as replayed, in every class: a
// rebuildable one goes (rebuilding twice only rebuilds the same thing),
// dedupe and same_operation ones are skipped (Done), revalidate and
// manual ones are blocked for a person; each names the request that
// replayed it. At execution the ledger's answer decides the same way.
func TestReplayedIdentityByClass(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	for _, tc := range []struct {
		class    Class
		itemType string
		outcome  Outcome
	}{
		{Rebuildable, "search.index_update", Go},
		{Dedupe, "analytics.event", Done},
		{SameOperation, "email.send", Done},
		{Revalidate, "accounts.grant", Block},
		{Manual, "orders.refund", Block},
	} {
		t.Run(string(tc.class), func(t *testing.T) {
			for what, mark := range map[string]func(*Item){
				`message id "ORDERS:42"`: func(i *Item) { i.AlreadyReplayed = true },
				`operation id "op-7f3a"`: func(i *Item) { i.OperationReplayed = true },
			} {
				item := testItem(tc.itemType)
				item.ReplayedBy = 17
				mark(&item)
				v := JudgeItem(tbl, item, AtDraft)
				if v.Class != tc.class || v.Outcome != tc.outcome {
					t.Fatalf("%s replayed: %s %s %q, want %s %s", what, v.Class, v.Outcome, v.Reason, tc.class, tc.outcome)
				}
				if tc.outcome != Go && (v.Check != CheckLedger || !strings.Contains(v.Reason, what+" was already replayed") ||
					!strings.Contains(v.Reason, "by replay request 17")) {
					t.Errorf("%s replayed: %s %q, want the ledger check naming it and request 17", what, v.Check, v.Reason)
				}
			}

			j := JudgeJob(Job{Class: tc.class, Ledger: &Ledger{Replayed: true, ReplayedBy: 17}})
			want := tc.outcome
			if tc.class == Revalidate {
				want = Block // before the revalidation is asked for
			}
			if j.Outcome != want || (want != Go && (j.Check != CheckLedger || !strings.Contains(j.Reason, "by replay request 17"))) {
				t.Errorf("at execution: %s %s %q, want %s by the ledger naming request 17", j.Outcome, j.Check, j.Reason, want)
			}
		})
	}
}

// TestIdentitiesOfEveryClassButRebuildable: what a worker asks the ledger
// about, and its publish gate locks, for each class: the message id and,
// when there is one, the operation id, for every class but rebuildable.
func TestIdentitiesOfEveryClassButRebuildable(t *testing.T) {
	t.Parallel()
	if ids := Identities(Rebuildable, []Class{Rebuildable}, "acme", "app.acme.x", "m", "op"); len(ids) != 0 {
		t.Errorf("rebuildable: %q, want none", ids)
	}
	for _, c := range []Class{Dedupe, SameOperation, Revalidate, Manual} {
		if ids := Identities(c, nil, "acme", "app.acme.x", "m", "op"); len(ids) != 2 || ids[0] != Identity(Dedupe, "acme", "app.acme.x", "m", "op") || ids[1] != Identity(SameOperation, "acme", "app.acme.x", "m", "op") {
			t.Errorf("%s: %q, want the message id and the operation id", c, ids)
		}
		if ids := Identities(c, nil, "acme", "app.acme.x", "m", ""); len(ids) != 1 {
			t.Errorf("%s without an operation id: %q, want the message id alone", c, ids)
		}
	}
	// A message id is its subject's (JetStream scopes it to a stream); an
	// operation id is the tenant's, wherever its messages go.
	if Identity(Dedupe, "acme", "app.acme.search", "m", "op") == Identity(Dedupe, "acme", "app.acme.analytics", "m", "op") {
		t.Error("one message id on two subjects is one identity")
	}
	if Identity(SameOperation, "acme", "app.acme.search", "m", "op") != Identity(SameOperation, "acme", "app.acme.analytics", "x", "op") {
		t.Error("one operation id on two subjects is two identities")
	}
}
