package views

import (
	"context"
	"strings"
	"testing"
)

// TestActionName: an action's name may break after each dot and
// underscore (a <wbr> there, nothing else added), so the audit table wraps
// it at 1024px rather than running past the page, and it reads and copies
// as the name.
func TestActionName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, want string }{
		{"replay.item.requested", "replay.<wbr>item.<wbr>requested"},
		{"retention.terms_rollback_allowed", "retention.<wbr>terms_<wbr>rollback_<wbr>allowed"},
		{"login", "login"},
		{"", ""},
		{"a.", "a."},
		{"._", ".<wbr>_"},
		{"x.<b>_y", "x.<wbr>&lt;b&gt;_<wbr>y"},
	} {
		var b strings.Builder
		if err := actionName(tc.name).Render(context.Background(), &b); err != nil {
			t.Fatalf("%q: %v", tc.name, err)
		}
		if b.String() != tc.want {
			t.Errorf("%q: got %q, want %q", tc.name, b.String(), tc.want)
		}
		if got := strings.Join(nameParts(tc.name), ""); got != tc.name {
			t.Errorf("%q: parts join to %q", tc.name, got)
		}
	}
}
