package authz

import (
	"context"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/logs"
)

// TestFixLeft12MappingDiffersSaysSo: the group-role mapping is a setting
// of each process, and a replica rolled with another one granted other
// roles with nothing but its own start-up INFO line to tell. Now a process
// whose mapping differs from one a running process reported says so at
// start (WARN, once per other mapping) and in
// quarantine_authz_group_mappings_other; the others see it at their next
// beat; a mapping no process has reported for mappingAlive no longer
// counts. Processes with the same mapping (in any order) say nothing.
func TestFixLeft12MappingDiffersSaysSo(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	parse := func(s string) GroupMap {
		m, err := ParseGroupMap(s)
		require.NoError(t, err)
		m.Prefix = "quarantine:"
		return m
	}
	start := func(m GroupMap, by string) (*MappingWatch, *logs.Buffer) {
		var out logs.Buffer
		w, err := NewMappingWatch(ctx, db.Pool, m, by, prometheus.NewRegistry(), slog.New(slog.NewTextHandler(&out, nil)))
		require.NoError(t, err)
		return w, &out
	}
	old := parse("platform=acme:oncall; sec=*:auditor")
	a, alogs := start(old, "serve on a")
	same, slogs := start(parse("sec=*:auditor; platform=acme:oncall"), "worker on w")
	assert.Zero(t, testutil.ToFloat64(a.others))
	assert.Zero(t, testutil.ToFloat64(same.others), "the same mapping, its rules in another order")
	assert.NotContains(t, alogs.String()+slogs.String(), "level=WARN")

	changed, clogs := start(parse("platform=acme:oncall,acme:approver; sec=*:auditor"), "serve on b")
	assert.Equal(t, 1.0, testutil.ToFloat64(changed.others), "one other mapping in use")
	assert.Contains(t, clogs.String(), "level=WARN")
	assert.Contains(t, clogs.String(), "other_fingerprint="+old.Fingerprint())
	assert.Contains(t, clogs.String(), `other_seen_by="worker on w"`)

	_, err := a.see(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1.0, testutil.ToFloat64(a.others), "the running process sees the newcomer at its next beat")
	assert.Contains(t, alogs.String(), "other_fingerprint="+changed.fingerprint)
	n := len(clogs.String())
	_, err = changed.see(ctx)
	require.NoError(t, err)
	assert.Equal(t, n, len(clogs.String()), "warned once while the other mapping stays in use")

	// The old mapping's processes are gone (restarted with the new one).
	_, err = db.OwnerPool.Exec(ctx, `UPDATE authz_group_mappings SET last_seen = now() - interval '10 minutes' WHERE fingerprint = $1`, old.Fingerprint())
	require.NoError(t, err)
	_, err = changed.see(ctx)
	require.NoError(t, err)
	assert.Zero(t, testutil.ToFloat64(changed.others), "every running process grants alike")
}
