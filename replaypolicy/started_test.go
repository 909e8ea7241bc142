package replaypolicy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestApprovalExpiresUntilSomethingWasPublished: an approval is for now.
// Its expiry is judged while nothing of the request may have been
// published: approved, and no job of it marked attempted. A request
// running, or one a job of which a worker marked attempted and recorded
// nothing for (Started), has started within its approval's expiry.
func TestApprovalExpiresUntilSomethingWasPublished(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	expired := testNow.Add(-25 * time.Hour) // rebuildable: 24h
	for _, tc := range []struct {
		name    string
		status  string
		started bool
		want    Outcome
	}{
		{"ApprovedNothingPublished", "approved", false, Block},
		{"ApprovedJobMarkedAttempted", "approved", true, Go},
		{"Running", "running", false, Go},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := JudgeRun(tbl, Run{Tenant: "acme", Class: Rebuildable, Status: tc.status, Started: tc.started, PolicyVersion: tbl.Version(),
				ApprovedAt: expired, Requester: alice}, testNow)
			assert.Equal(t, tc.want, v.Outcome, v.Reason)
			if tc.want == Block {
				assert.Equal(t, CheckExpired, v.Check)
			}
		})
	}
}
