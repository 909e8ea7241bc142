package views

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestGroupPanelSaysWhoChangedItWithSpaces: the panel's last change reads
// "changed by <person> <time>", the person set off by spaces (templ took a
// space written right after the call for its children and dropped it).
func TestGroupPanelSaysWhoChangedItWithSpaces(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	m := GroupPanelModel{Fingerprint: "fp", Tenants: []GroupTenantPanel{{
		Triage: GroupTriageView{Tenant: "acme", Owner: "team-a", UpdatedBy: "oncall@example.com", UpdatedAt: at},
	}}}
	var b strings.Builder
	require.NoError(t, GroupPanel(m).Render(context.Background(), &b))
	text := b.String()
	i := strings.Index(text, "changed by")
	require.GreaterOrEqual(t, i, 0, "no 'changed by' in the panel")
	line := text[i:min(len(text), i+400)]
	require.Regexp(t, `changed by\s+(<[^>]*>)*oncall@example\.com(</[^>]*>)*\s+<time`, line)
}
