package replaypolicy

import (
	"strings"
	"testing"
	"time"

	"github.com/quarantine-console/quarantine"
)

// TestRev38ShortenedItemTypeMatchesNoItemTypeRule: ingest stores an item
// type over 256 bytes shortened (quarantine.BoundedKey), which drops the
// dots after the cut. "search.<260 bytes>.admin.drop_index" then read as
// two parts and took search.*'s class (rebuildable: direct, no approver),
// though the policy sends deeper item types to manual. It now matches no
// item-type rule and falls to manual; the subject's rules still apply.
func TestRev38ShortenedItemTypeMatchesNoItemTypeRule(t *testing.T) {
	t.Parallel()
	tbl, err := Parse("ok.toml", []byte(lines(`[[rule]]`, `item_type = "search.*"`, `class = "rebuildable"`,
		`[[rule]]`, `item_type = ">"`, `class = "dedupe"`,
		`[[rule]]`, `subject = "app.*.search.>"`, `class = "rebuildable"`)))
	if err != nil {
		t.Fatal(err)
	}
	long := quarantine.BoundedKey("search."+strings.Repeat("x", 260)+".admin.drop_index", 256)
	if !strings.HasPrefix(long, "search.x") || strings.Count(long, ".") != 1 {
		t.Fatalf("the stored key %q is not the two-part shortening this test is about", long)
	}
	c := tbl.ClassOf(long, "app.acme.search.admin.drop_index")
	if c.Class != Manual || c.TypeRule != -1 {
		t.Errorf("a shortened item type is classed %s by rule %d; want manual by none", c.Class, c.TypeRule)
	}
	if c := tbl.ClassOf("search.index_update", "app.acme.search.index_update"); c.Class != Rebuildable {
		t.Errorf("a short item type is classed %s; want its rule's rebuildable", c.Class)
	}
	if c, rule := tbl.ClassFor(long); c != Manual || rule != -1 {
		t.Errorf("ClassFor(shortened) = %s by rule %d; want manual by none", c, rule)
	}
	if why := tbl.NoBulk(long, ""); why == "" {
		t.Errorf("a shortened item type is offered a bulk replay, which its class (manual) refuses")
	}

	// Retention: the shortened key takes no rule's period for its first
	// tokens, but the longest of its tenant's, as an item type no rule
	// names.
	ret, err := Parse("ok.toml", []byte(lines(`[[rule]]`, `item_type = ">"`, `class = "manual"`,
		`[retention]`, `unresolved = "365d"`,
		`[[retention.rule]]`, `item_type = "search.*"`, `unresolved = "2d"`)))
	if err != nil {
		t.Fatal(err)
	}
	k, ok := ret.Retention().For("acme", long, "quarantined")
	if !ok || k.For != 365*24*time.Hour {
		t.Errorf("a shortened item type is kept %v (ok %v); want 365d, not search.*'s 2d", k.For, ok)
	}
	if k, _ := ret.Retention().For("acme", "search.index_update", "quarantined"); k.For != 2*24*time.Hour {
		t.Errorf("search.index_update is kept %v; want its rule's 2d", k.For)
	}
}
