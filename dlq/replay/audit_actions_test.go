package replay

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestJobStatesAreAuditActions: the worker records each job that ends (or
// is left unknown) as "replay.item.<state>"; every such state, as job.go
// declares them, is in the audit log's one list of actions, so the
// auditor's filter offers it. Pending (released untouched) and claimed
// (held by a worker) are never recorded.
func TestJobStatesAreAuditActions(t *testing.T) {
	t.Parallel()
	file, err := parser.ParseFile(token.NewFileSet(), "job.go", nil, 0)
	require.NoError(t, err)
	var states []string
	ast.Inspect(file, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		if typ, ok := spec.Type.(*ast.Ident); !ok || typ.Name != "JobState" {
			return true
		}
		for _, v := range spec.Values {
			if lit, ok := v.(*ast.BasicLit); ok {
				s, err := strconv.Unquote(lit.Value)
				require.NoError(t, err)
				states = append(states, s)
			}
		}
		return true
	})
	require.Contains(t, states, string(JobReplayed), "the walk found the states")
	for _, st := range states {
		if JobState(st) == JobPending || JobState(st) == JobClaimed {
			continue
		}
		assert.True(t, audit.KnownAction(audit.ReplayItemPrefix+st), "job state %q: add %q to audit/actions.go", st, audit.ReplayItemPrefix+st)
	}
}
