package replaypolicy

import "testing"

// TestRev37JudgeReadRefusesAnyVersionButTheOneRead: an approval goes only
// at the version its approver read the request at; any other, earlier or
// later, is the conflict "read it again", whatever the intent says, and so
// is a version read that is none (a form that sent none). A read of 0 says
// nothing (a request starts at 1) and leaves the intent alone to judge.
func TestRev37JudgeReadRefusesAnyVersionButTheOneRead(t *testing.T) {
	for _, c := range []struct {
		read, now int
		want      Outcome
		reason    string
	}{
		{read: 2, now: 2, want: Go},
		{read: 2, now: 4, want: Block, reason: "the request changed since you read it: read it again"},
		{read: 5, now: 4, want: Block, reason: "the request changed since you read it: read it again"},
		{read: -1, now: 4, want: Block, reason: "the form did not say which version of the request you read: read it again"},
		{read: 0, now: 4, want: Go},
	} {
		v := JudgeRead(c.read, c.now)
		if v.Outcome != c.want || v.Reason != c.reason {
			t.Errorf("read at %d, now %d: %s (%q), want %s (%q)", c.read, c.now, v.Outcome, v.Reason, c.want, c.reason)
		}
		if v.Outcome == Block && v.Check != CheckIntentChanged {
			t.Errorf("read at %d, now %d: check %q", c.read, c.now, v.Check)
		}
	}
}
