package replaypolicy

import (
	"strings"
	"testing"
)

func TestPatternMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern  string
		itemType string
		want     bool
	}{
		{"search.index_update", "search.index_update", true},
		{"search.index_update", "search.index_updates", false},
		{"search.index_update", "Search.index_update", false}, // case-sensitive
		{"search.*", "search.index_update", true},
		{"search.*", "search", false},               // * is exactly one token
		{"search.*", "search.index.update", false},  // not two
		{"search.*", "searchx.index_update", false}, // tokens, not prefixes
		{"*.event", "analytics.event", true},
		{"*.event", "analytics.click", false},
		{"*.*", "a.b", true},
		{"*", "a", true},
		{"*", "a.b", false},
		{"orders.>", "orders.refund", true},
		{"orders.>", "orders.refund.partial", true},
		{"orders.>", "orders", false}, // > needs at least one token
		{">", "anything.at.all", true},
		{">", "x", true},
		{"a.*.>", "a.b.c", true},
		{"a.*.>", "a.b", false},
		{"search.*", "search.", false}, // empty token matches nothing
		{"*", "", false},
		{">", "", false},
		{">", ".a", false},
		{"a.>", "a..b", false},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+"~"+tt.itemType, func(t *testing.T) {
			t.Parallel()
			p, err := compilePattern(tt.pattern)
			if err != nil {
				t.Fatalf("compilePattern(%q): %v", tt.pattern, err)
			}
			if got := p.match(tt.itemType); got != tt.want {
				t.Errorf("%q.match(%q) = %t, want %t", tt.pattern, tt.itemType, got, tt.want)
			}
		})
	}
}

func TestCompilePatternInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern string
		want    string
	}{
		{"", "is empty"},
		{"search.", "empty token"},
		{".search", "empty token"},
		{"a..b", "empty token"},
		{"orders.>.refund", `">" before the last token`},
		{"orders.**", `"**"`},
		{"search*", "wildcards must be whole tokens"},
		{"se>rch.x", "wildcards must be whole tokens"},
		{"search index", `character ' '`},
		{"search/index", `character '/'`},
		{strings.Repeat("a.", 40) + "a", "more than 32 tokens"},
		{strings.Repeat("a", 300), "longer than 256"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			_, err := compilePattern(tt.pattern)
			if err == nil {
				t.Fatalf("compilePattern(%q) = nil error, want one containing %q", tt.pattern, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("compilePattern(%q) = %q, want it to contain %q", tt.pattern, err, tt.want)
			}
		})
	}
}

// TestPatternCovers checks covers against its definition by brute force: p
// covers q exactly when every item type q matches is matched by p. Patterns
// use the literals a and b and up to three tokens; item types use a, b and c
// (c stands for "any other token") and up to four tokens, which is enough to
// find a counterexample whenever one exists.
func TestPatternCovers(t *testing.T) {
	t.Parallel()
	var patterns []pattern
	var build func(prefix []string)
	build = func(prefix []string) {
		if len(prefix) > 0 {
			for _, last := range []string{"", ">"} {
				toks := append([]string(nil), prefix...)
				if last != "" {
					toks = append(toks, last)
				}
				p, err := compilePattern(strings.Join(toks, "."))
				if err != nil {
					t.Fatalf("compilePattern: %v", err)
				}
				patterns = append(patterns, p)
			}
		} else {
			p, err := compilePattern(">")
			if err != nil {
				t.Fatal(err)
			}
			patterns = append(patterns, p)
		}
		if len(prefix) == 3 {
			return
		}
		for _, tok := range []string{"a", "b", "*"} {
			build(append(append([]string(nil), prefix...), tok))
		}
	}
	build(nil)

	var items []string
	var gen func(prefix []string)
	gen = func(prefix []string) {
		if len(prefix) > 0 {
			items = append(items, strings.Join(prefix, "."))
		}
		if len(prefix) == 4 {
			return
		}
		for _, tok := range []string{"a", "b", "c"} {
			gen(append(append([]string(nil), prefix...), tok))
		}
	}
	gen(nil)

	for _, p := range patterns {
		for _, q := range patterns {
			want := true
			for _, it := range items {
				if q.match(it) && !p.match(it) {
					want = false
					break
				}
			}
			if got := p.covers(q); got != want {
				t.Errorf("%q.covers(%q) = %t, want %t", p.raw, q.raw, got, want)
			}
		}
	}
}
