package replaypolicy

import (
	"strings"
	"testing"

	"github.com/quarantine-console/quarantine"
)

// TestRev34RetentionRuleOfALongTenantNamesItsStoredKey: a tenant longer
// than 128 bytes is stored as its bounded key (its first bytes and a
// hash); a [[retention.rule]] naming the tenant as written matched no dead
// letter, so its dead letters were kept the section's period (30 days),
// not the rule's 365, while the policy page showed 365d for it. Such a
// rule is refused, naming the key to write; the key itself is taken and
// matches. A literal item type longer than 256 bytes likewise.
func TestRev34RetentionRuleOfALongTenantNamesItsStoredKey(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("t", 200)
	key := quarantine.BoundedKey(long, quarantine.MaxTenantBytes)
	src := func(tenant, itemType string) string {
		return lines(`[retention]`, `closed = "30d"`, `[[retention.rule]]`, `tenant = "`+tenant+`"`, `item_type = "`+itemType+`"`, `closed = "365d"`)
	}
	_, err := Parse("long.toml", []byte(src(long, ">")))
	if err == nil || !strings.Contains(err.Error(), "longer than 128 bytes") || !strings.Contains(err.Error(), key) {
		t.Fatalf("a rule naming a %d-byte tenant: error %v; want it refused, naming %q", len(long), err, key)
	}
	tbl, err := Parse("key.toml", []byte(src(key, ">")))
	if err != nil {
		t.Fatalf("the stored key is taken: %v", err)
	}
	k, ok := tbl.Retention().For(key, "billing.charge", "resolved")
	if !ok || k.For.Hours() != 365*24 {
		t.Errorf("For(the stored key) = %+v, %v; want the rule's 365 days", k, ok)
	}

	longType := "billing." + strings.Repeat("x", 300)
	_, err = Parse("type.toml", []byte(src("*", longType)))
	if err == nil || !strings.Contains(err.Error(), "longer than 256 bytes") || !strings.Contains(err.Error(), quarantine.BoundedKey(longType, quarantine.MaxItemTypeBytes)) {
		t.Errorf("a rule naming a %d-byte item type: error %v; want it refused, naming its key", len(longType), err)
	}
}

// TestRev34ShortenedSaysWhereTermsKeepLess: terms replacing others say
// where they keep dead letters a shorter time (a typo of "9d" for "90d"
// removes everything past 9 days at the next pass), line by line and for
// a rule they add of one tenant's item type; a longer or equal period
// says nothing.
func TestRev34ShortenedSaysWhereTermsKeepLess(t *testing.T) {
	t.Parallel()
	terms := func(src ...string) *Retention {
		tbl, err := Parse("t.toml", []byte(lines(src...)))
		if err != nil {
			t.Fatal(err)
		}
		return tbl.Retention()
	}
	old := terms(`[retention]`, `closed = "30d"`, `unresolved = "90d"`, `[[retention.rule]]`, `tenant = "acme"`, `item_type = "billing.>"`, `closed = "365d"`)
	same := terms(`[retention]`, `closed = "30d"`, `unresolved = "90d"`, `[[retention.rule]]`, `tenant = "acme"`, `item_type = "billing.>"`, `closed = "400d"`)
	if got := same.Shortened(old); got != nil {
		t.Errorf("longer terms: Shortened = %q, want none", got)
	}
	typo := terms(`[retention]`, `closed = "30d"`, `unresolved = "9d"`, `[[retention.rule]]`, `tenant = "acme"`, `item_type = "billing.>"`, `closed = "365d"`,
		`[[retention.rule]]`, `tenant = "globex"`, `item_type = "orders.refund"`, `resolved = "1d"`)
	got := strings.Join(typo.Shortened(old), "\n")
	for _, want := range []string{"* > quarantined: 90d → 9d", "* > replay_failed: 90d → 9d", "acme billing.> quarantined: 90d → 9d", "globex orders.refund resolved: 30d → 24h"} {
		if !strings.Contains(got, want) {
			t.Errorf("Shortened = %q, want it to say %q", got, want)
		}
	}
	if strings.Contains(got, "replayed") || strings.Contains(got, "acme billing.> resolved") {
		t.Errorf("Shortened = %q: says a period that did not get shorter", got)
	}
	if typo.Shortened(nil) != nil {
		t.Error("no terms before: nothing shortened")
	}

	// A rule dropped, a wildcard rule added, an every-tenant literal rule
	// added: each keeps some dead letters a shorter time too.
	dropped := terms(`[retention]`, `closed = "30d"`, `unresolved = "90d"`)
	if got := strings.Join(dropped.Shortened(old), "\n"); !strings.Contains(got, "acme billing.> (rule removed) resolved: 365d → 30d") {
		t.Errorf("a rule dropped: Shortened = %q", got)
	}
	wild := terms(`[retention]`, `closed = "30d"`, `unresolved = "90d"`, `[[retention.rule]]`, `tenant = "acme"`, `item_type = "billing.>"`, `closed = "365d"`,
		`[[retention.rule]]`, `tenant = "acme"`, `item_type = ">"`, `closed = "1d"`)
	if got := strings.Join(wild.Shortened(old), "\n"); !strings.Contains(got, "acme > resolved: 30d → 24h") {
		t.Errorf("a wildcard rule added: Shortened = %q", got)
	}
	every := terms(`[retention]`, `closed = "30d"`, `unresolved = "90d"`, `[[retention.rule]]`, `tenant = "acme"`, `item_type = "billing.>"`, `closed = "365d"`,
		`[[retention.rule]]`, `tenant = "*"`, `item_type = "orders.refund"`, `resolved = "1d"`)
	if got := strings.Join(every.Shortened(old), "\n"); !strings.Contains(got, "* orders.refund resolved: 30d → 24h") {
		t.Errorf("an every-tenant rule added: Shortened = %q", got)
	}
}
