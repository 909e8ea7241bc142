package app

import (
	"time"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// retention is the policy file's retention as the keeper asks it.
type retention struct{ r *replaypolicy.Retention }

// RetentionOf adapts the policy table's retention to the keeper.
func RetentionOf(r *replaypolicy.Retention) dlq.RetentionPolicy { return retention{r} }

// Keep implements dlq.RetentionPolicy.
func (p retention) Keep(tenant, itemType string, status dlq.Status) (time.Duration, bool) {
	k, ok := p.r.For(tenant, itemType, string(status))
	if !ok || k.Forever {
		return 0, false
	}
	return k.For, true
}

// Longest implements dlq.RetentionPolicy.
func (p retention) Longest() (time.Duration, bool) {
	k := p.r.Longest()
	return k.For, !k.Forever
}
