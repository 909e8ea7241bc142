package replay_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestStoppableQueryAgreesWithMayEverRepublish: the SQL that decides which
// requests done with problems an emergency stop ends (before its limit)
// says what Request.MayEverRepublish says, for every class, every class
// in its union and every count of approvals recorded, so the stop page,
// CanStop and the stop agree with the request page's "may still
// republish".
func TestStoppableQueryAgreesWithMayEverRepublish(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	q := `SELECT ` + replay.MayEverRepublishSQL() + ` FROM (SELECT $1::int AS approvals_needed, $2::text AS class, $3::text[] AS classes) AS replay_requests`
	unions := [][]replaypolicy.Class{nil}
	for _, c := range replaypolicy.KnownClasses() {
		unions = append(unions, []replaypolicy.Class{c})
	}
	for _, class := range replaypolicy.KnownClasses() {
		for _, union := range unions {
			for asked := range 4 {
				r := replay.Request{Class: class, Classes: union, ApprovalsNeeded: asked}
				cols := make([]string, 0, len(union))
				for _, c := range union {
					cols = append(cols, string(c))
				}
				var inSQL bool
				require.NoError(t, b.db.Pool.QueryRow(ctx, q, asked, string(class), cols).Scan(&inSQL))
				assert.Equal(t, r.MayEverRepublish(), inSQL, fmt.Sprintf("class %s, union %v, %d approvals recorded", class, union, asked))
			}
		}
	}
	assert.False(t, replay.Request{Class: replaypolicy.Manual}.MayEverRepublish(), "manual needs two approvers, whatever was recorded")
	assert.True(t, replay.Request{Class: replaypolicy.Rebuildable}.MayEverRepublish(), "rebuildable, none recorded: one person may republish under some policy")
}
