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
