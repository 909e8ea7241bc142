package replaypolicy

import (
	"strings"
	"testing"
	"time"
)

// TestKeptOnAnotherSubjectIsNotOurs: the message the broker keeps under
// the replay's id carries this replay's headers and approved payload and
// was stored after its first publish, but it is ours only if it is stored
// where a publish to the job's subject is stored (the stream's subject
// transform applied). A copy on another subject of the stream defers a
// first attempt (nothing of ours is kept: the republish goes once its
// window has passed) and sends a retry to a person (someone copied the
// earlier publish, which may have landed); so does a kept message whose
// stream's transform could not be applied to tell.
func TestKeptOnAnotherSubjectIsNotOurs(t *testing.T) {
	t.Parallel()
	first := testNow.Add(-time.Minute)
	dropped := func(firstAttempt bool, subject, storesAs string) Ack {
		return Ack{MsgID: "m-1", Subject: "app.acme.x", Stream: "APP", Seq: 9, Duplicate: true, FirstAttempt: firstAttempt, FirstAttemptAt: first,
			FirstPublishedAt: first, ApprovedSHA256: "abcd", Margin: time.Second, Window: Window{Stream: "APP", Duplicates: 2 * time.Minute},
			Kept: Kept{Tagged: true, StoredAt: first.Add(time.Second), PayloadSHA256: "abcd", Subject: subject, StoresAs: storesAs}}
	}
	for _, tc := range []struct {
		name    string
		ack     Ack
		outcome Outcome
		check   string
		reason  string
	}{
		{"OwnOnTheSubject", dropped(false, "app.acme.x", "app.acme.x"), Replayed, CheckOwnDuplicate, "this replay's own earlier publish"},
		{"OwnOnTheTransformedSubject", dropped(true, "t.acme.x", "t.acme.x"), Replayed, CheckOwnDuplicate, "this replay's own earlier publish"},
		{"CopyMetByARepublish", dropped(true, "app.other.copy", "app.acme.x"), Defer, CheckDuplicateKept,
			`that is not this replay's (it carries this replay's headers and approved payload, but it is stored under subject "app.other.copy", not "app.acme.x"`},
		{"CopyMetByARetry", dropped(false, "app.other.copy", "app.acme.x"), Reconcile, CheckMaybePublished,
			`but it is stored under subject "app.other.copy", not "app.acme.x": it did not reach the original subject. It is a copy of this replay's earlier publish`},
		{"UntransformedMetByARepublish", dropped(true, "app.acme.x", ""), Defer, CheckDuplicateKept, "the stream's subject transform could not be applied"},
		{"UntransformedMetByARetry", dropped(false, "app.acme.x", ""), Reconcile, CheckMaybePublished, "the stream's subject transform could not be applied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := JudgeAck(tc.ack, testNow)
			if v.Outcome != tc.outcome || v.Check != tc.check || !strings.Contains(v.Reason, tc.reason) {
				t.Fatalf("JudgeAck = %s/%s %q, want %s/%s containing %q", v.Outcome, v.Check, v.Reason, tc.outcome, tc.check, tc.reason)
			}
			if ours := tc.outcome == Replayed; OursKept(tc.ack) != ours {
				t.Fatalf("OursKept = %v, want %v", !ours, ours)
			}
		})
	}
}

// TestRev38FirstAttemptMetByItsOwnUnrecordedPublishIsNotDeferred: the
// worker's record of a first publish was lost (a PostgreSQL failover that
// dropped the commits after it): on the new primary the job is a first
// attempt again, with a first publish time of now. The broker answers
// Duplicate and keeps that earlier publish: this replay's headers and
// approved payload, on its subject, stored seconds before. It is a person's
// to settle, not deferred: the republish after the window would be a
// second effect. Before, only a retry was sent to a person; a first
// attempt was deferred once the gap passed the margin (a second).
func TestRev38FirstAttemptMetByItsOwnUnrecordedPublishIsNotDeferred(t *testing.T) {
	t.Parallel()
	now := testNow
	for _, gap := range []time.Duration{5 * time.Second, 40 * time.Second} {
		// The gate's commit was lost with the rest: the job's first
		// publish ever again, with no time on record (the worker's Ack of
		// a first publish ever), or one after a person's republish.
		for _, published := range []time.Time{{}, now} {
			a := Ack{MsgID: "m-1", Subject: "app.acme.x", Stream: "APP", Seq: 9, Duplicate: true, FirstAttempt: true,
				FirstPublishedAt: published, ApprovedSHA256: "abcd", Margin: time.Second, Window: Window{Stream: "APP", Duplicates: 2 * time.Minute},
				Kept: Kept{Tagged: true, StoredAt: now.Add(-gap), PayloadSHA256: "abcd", Subject: "app.acme.x", StoresAs: "app.acme.x"}}
			v := JudgeAck(a, now)
			if v.Outcome != Reconcile || v.Check != CheckMaybePublished || !strings.Contains(v.Reason, "a publish of this replay the database has no record of") {
				t.Errorf("gap %s, on record %v: JudgeAck = %s/%s %q, want reconcile/%s", gap, !published.IsZero(), v.Outcome, v.Check, v.Reason, CheckMaybePublished)
			}
		}
	}
}
