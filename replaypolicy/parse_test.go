package replaypolicy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestLoadShipped(t *testing.T) {
	t.Parallel()
	tbl, err := Load("../dev/policy.toml")
	if err != nil {
		t.Fatalf("Load shipped policy: %v", err)
	}
	t.Run("DemoItemTypes", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			itemType string
			want     Class
			matched  bool
		}{
			{"search.index_update", Rebuildable, true},
			{"search.reindex", Rebuildable, true},
			{"analytics.event", Dedupe, true},
			{"analytics.pageview", Dedupe, true},
			{"email.send", SameOperation, true},
			{"email.digest", SameOperation, true},
			{"accounts.permission_grant", Revalidate, true},
			{"accounts.role_revoke", Revalidate, true},
			{"orders.refund", Manual, true},
			{"orders.refund.partial", Manual, true},
			{"billing.charge", Manual, false},          // unknown types fall to manual
			{"search.admin.drop_index", Manual, false}, // deeper than "search.*"
			{"", Manual, false},
		}
		for _, tt := range tests {
			c, rule := tbl.ClassFor(tt.itemType)
			if c != tt.want || (rule >= 0) != tt.matched {
				t.Errorf("ClassFor(%q) = %s, rule %d; want %s, matched %t", tt.itemType, c, rule, tt.want, tt.matched)
			}
		}
	})
	t.Run("DemoSubjects", func(t *testing.T) {
		t.Parallel()
		// Each demo item type at its own subject keeps its item type's
		// class; a subject nobody classified is manual whatever item type
		// the dead letter claims (the producer picks both).
		tests := []struct {
			itemType, subject string
			want              Class
		}{
			{"search.index_update", "app.acme.search.index_update", Rebuildable},
			{"analytics.event", "app.acme.analytics.event", Dedupe},
			{"email.send", "app.acme.email.send", SameOperation},
			{"accounts.permission_grant", "app.acme.accounts.permission_grant", Revalidate},
			{"orders.refund", "app.acme.orders.refund", Manual},
			{"search.index_update", "events.acme.search.index_update", Rebuildable},
			{"search.index_update", "app.acme.payments.capture", Manual},
			{"search.index_update", "app.acme.search.admin.drop_index", Manual},
			{"analytics.event", "app.acme.page_view", Manual},
			{"email.send", "app.acme.accounts.permission_grant", Revalidate},
		}
		for _, tt := range tests {
			if got := tbl.ClassOf(tt.itemType, tt.subject).Class; got != tt.want {
				t.Errorf("ClassOf(%q, %q) = %s, want %s", tt.itemType, tt.subject, got, tt.want)
			}
		}
		if why := tbl.UnlistedSubjects(); why != "" {
			t.Errorf("the shipped policy leaves subjects unlisted: %s", why)
		}
	})
	t.Run("KnobsAreTheDefaults", func(t *testing.T) {
		t.Parallel()
		// The file says its class sections spell out the built-in defaults.
		for _, cp := range tbl.Classes() {
			want, _ := DefaultKnobs(cp.Class)
			if cp.Knobs != want {
				t.Errorf("class %s: knobs %+v, want the defaults %+v", cp.Class, cp.Knobs, want)
			}
		}
	})
	if got := tbl.Name(); got != "../dev/policy.toml" {
		t.Errorf("Name() = %q", got)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	classes := "rebuildable, dedupe, same_operation, revalidate, manual"
	tests := []struct {
		name string
		src  string
		want []string // each must appear in the error text
	}{
		{
			name: "UnknownClassInRule",
			src: lines(
				`[[rule]]`,
				`item_type = "analytics.*"`,
				`class = "dedupe"`,
				`[[rule]]`,
				`item_type = "orders.>"`,
				`class = "manual"`,
				`[[rule]]`,
				`item_type = "search.*"`,
				`class = "rebuildabel"`,
			),
			want: []string{`bad.toml: line 9: rule 3: class "rebuildabel" is not one of ` + classes + ` (did you mean "rebuildable"?)`},
		},
		{
			name: "UnknownRuleKey",
			src:  lines(`# a comment`, `[[rule]]`, `itemtype = "search.*"`, `class = "rebuildable"`),
			want: []string{
				`bad.toml: line 2: rule 1: item_type is missing`,
				`bad.toml: line 3: rule 1: unknown key "itemtype": a rule has item_type, subject and class (did you mean "item_type"?)`,
			},
		},
		{
			name: "RuleWithoutClass",
			src:  lines(`[[rule]]`, `item_type = "search.*"`),
			want: []string{`bad.toml: line 1: rule 1: class is missing`},
		},
		{
			name: "RuleFieldTypes",
			src:  lines(`[[rule]]`, `item_type = ["search.*"]`, `class = 3`),
			want: []string{
				`bad.toml: line 2: rule 1: item_type must be a string; got an array`,
				`bad.toml: line 3: rule 1: class must be a string; got integer 3`,
			},
		},
		{
			name: "InlineRules",
			src:  lines(`rule = [`, `  { item_type = "search.*", class = "rebuildable" },`, `  { item_type = "x.*", class = "nope" },`, `]`),
			want: []string{`bad.toml: line 3: rule 2: class "nope" is not one of`},
		},
		{
			name: "InlineRuleOverLines",
			src: lines(`rule = [ { item_type = "search.*", class = "rebuildable" }, # the first`, `  { item_type = "x.*", # "{" in a comment`,
				`    class = "nope" },`, `]`),
			want: []string{`bad.toml: line 3: rule 2: class "nope" is not one of`},
		},
		{
			name: "InlineRetentionRules",
			src:  lines(`[retention]`, `rule = [`, `  {tenant = "acme", closed = "7d"},`, `  {tenant = "acme.eu", closed = "7d"},`, `]`),
			want: []string{`bad.toml: line 4: retention.rule 2: tenant "acme.eu" is more than one subject token`},
		},
		{
			name: "RuleAsSingleTable",
			src:  lines(`[rule]`, `item_type = "search.*"`, `class = "rebuildable"`),
			want: []string{`bad.toml: line 1: rule must be an array of tables, written [[rule]]`},
		},
		{
			name: "UnknownTopLevelKey",
			src:  lines(`version = 2`),
			want: []string{`bad.toml: line 1: unknown key "version": a policy file has generation_limit, [[rule]] entries, [class.<name>], [error_class.<name>] and [retention] sections`},
		},
		{
			name: "UnknownClassSection",
			src:  lines(`[class.rebuildabel]`, `approvals = 0`),
			want: []string{`bad.toml: line 1: class.rebuildabel: class "rebuildabel" is not one of ` + classes + ` (did you mean "rebuildable"?)`},
		},
		{
			name: "ClassNotATable",
			src:  lines(`class = "manual"`),
			want: []string{`bad.toml: line 1: class must be a table of sections`},
		},
		{
			name: "UnknownKnob",
			src:  lines(`[class.manual]`, `approval = 2`),
			want: []string{`bad.toml: line 2: class.manual: unknown key "approval": a class has approvals, bulk, bulk_cap, default_rate, max_rate, approval_expiry, typed_confirmation (did you mean "approvals"?)`},
		},
		{
			name: "ManualOneApproval",
			src:  lines(`[class.manual]`, `bulk = false`, `approvals = 1`),
			want: []string{`bad.toml: line 3: class.manual: approvals = 1 is below the minimum of 2 for manual (two distinct approvers, neither the requester)`},
		},
		{
			name: "ManualBulk",
			src:  lines(`[class.manual]`, `bulk = true`, `bulk_cap = 10`),
			want: []string{`bad.toml: line 2: class.manual: bulk = true is not allowed for manual`},
		},
		{
			name: "ManualWithoutTypedConfirmation",
			src:  lines(`[class.manual]`, `typed_confirmation = false`),
			want: []string{`bad.toml: line 2: class.manual: typed_confirmation = false is not allowed for manual`},
		},
		{
			name: "SameOperationNoApproval",
			src:  lines(`[class.same_operation]`, `approvals = 0`),
			want: []string{`bad.toml: line 2: class.same_operation: approvals = 0 is below the minimum of 1 for same_operation (one approver who is not the requester)`},
		},
		{
			name: "RevalidateNoApproval",
			src:  lines(`[class.revalidate]`, ``, `approvals = 0`),
			want: []string{`bad.toml: line 3: class.revalidate: approvals = 0 is below the minimum of 1 for revalidate`},
		},
		{
			name: "TooManyApprovals",
			src:  lines(`[class.rebuildable]`, `approvals = 3`),
			want: []string{`bad.toml: line 2: class.rebuildable: approvals = 3 is above the maximum of 2`},
		},
		{
			name: "NegativeApprovals",
			src:  lines(`[class.dedupe]`, `approvals = -1`),
			want: []string{`bad.toml: line 2: class.dedupe: approvals = -1 is below the minimum of 0 for dedupe`},
		},
		{
			name: "KnobTypes",
			src:  lines(`[class.rebuildable]`, `approvals = "0"`, `bulk = "yes"`, `bulk_cap = 10.5`, `max_rate = "fast"`, `approval_expiry = 24`),
			want: []string{
				`bad.toml: line 2: class.rebuildable: approvals must be a whole number; got string "0"`,
				`bad.toml: line 3: class.rebuildable: bulk must be true or false; got string "yes"`,
				`bad.toml: line 4: class.rebuildable: bulk_cap must be a whole number; got float 10.5`,
				`bad.toml: line 5: class.rebuildable: max_rate must be a number (messages per second); got string "fast"`,
				`bad.toml: line 6: class.rebuildable: approval_expiry must be a duration string such as "4h" or "7d"; got integer 24`,
			},
		},
		{
			name: "Rates",
			src:  lines(`[class.rebuildable]`, `default_rate = 0`, `max_rate = -5`, `[class.dedupe]`, `default_rate = 300`, `max_rate = 200`, `[class.revalidate]`, `max_rate = 1e9`),
			want: []string{
				`bad.toml: line 2: class.rebuildable: default_rate = 0 must be above 0 and at most 100000 messages per second`,
				`bad.toml: line 3: class.rebuildable: max_rate = -5 must be above 0`,
				`bad.toml: line 5: class.dedupe: default_rate = 300 is above max_rate = 200`,
				`bad.toml: line 8: class.revalidate: max_rate = 1e+09 must be above 0 and at most 100000`,
			},
		},
		{
			name: "RateNaN",
			src:  lines(`[class.rebuildable]`, `max_rate = nan`),
			want: []string{`bad.toml: line 2: class.rebuildable: max_rate = NaN must be above 0`},
		},
		{
			name: "Expiry",
			src: lines(
				`[class.rebuildable]`, `approval_expiry = "30s"`,
				`[class.dedupe]`, `approval_expiry = "31d"`,
				`[class.same_operation]`, `approval_expiry = "forever"`,
				`[class.revalidate]`, `approval_expiry = "-2h"`,
			),
			want: []string{
				`bad.toml: line 2: class.rebuildable: approval_expiry = "30s": must be between 1m and 30d`,
				`bad.toml: line 4: class.dedupe: approval_expiry = "31d": must be between 1m and 30d`,
				`bad.toml: line 6: class.same_operation: approval_expiry = "forever": not a duration`,
				`bad.toml: line 8: class.revalidate: approval_expiry = "-2h": must be between 1m and 30d`,
			},
		},
		{
			name: "BulkCap",
			src:  lines(`[class.rebuildable]`, `bulk_cap = 0`, `[class.dedupe]`, `bulk_cap = 100001`, `[class.revalidate]`, `bulk = false`, `bulk_cap = 5`),
			want: []string{
				`bad.toml: line 2: class.rebuildable: bulk_cap = 0 must be between 1 and 100000 when bulk = true`,
				`bad.toml: line 4: class.dedupe: bulk_cap = 100001 must be between 1 and 100000`,
				`bad.toml: line 7: class.revalidate: bulk_cap = 5 has no effect with bulk = false`,
			},
		},
		{
			name: "BulkCapOverApprovable",
			src:  lines(`[class.same_operation]`, `bulk_cap = 20001`, `[class.rebuildable]`, `approvals = 1`, `bulk_cap = 50000`),
			want: []string{
				`bad.toml: line 2: class.same_operation: bulk_cap = 20001 is above 20000, the most items an approver can approve in one request (the request page lists no more), and same_operation needs an approver`,
				`bad.toml: line 5: class.rebuildable: bulk_cap = 50000 is above 20000, the most items an approver can approve in one request`,
			},
		},
		{
			name: "MalformedGlob",
			src:  lines(`[[rule]]`, `item_type = "search.**"`, `class = "rebuildable"`, `[[rule]]`, `item_type = "orders.>.refund"`, `class = "manual"`),
			want: []string{
				`bad.toml: line 2: rule 1: item_type "search.**" uses "**", which is not supported; use ">" as the last token to match the rest`,
				`bad.toml: line 5: rule 2: item_type "orders.>.refund" has ">" before the last token`,
			},
		},
		{
			name: "DuplicatePattern",
			src:  lines(`[[rule]]`, `item_type = "email.*"`, `class = "same_operation"`, `[[rule]]`, `item_type = "email.*"`, `class = "manual"`),
			want: []string{`bad.toml: line 5: rule 2: item_type "email.*" repeats rule 1; the first match wins, so this rule is never used`},
		},
		{
			name: "ShadowedPattern",
			src:  lines(`[[rule]]`, `item_type = "orders.>"`, `class = "manual"`, `[[rule]]`, `item_type = "orders.refund"`, `class = "manual"`),
			want: []string{`bad.toml: line 5: rule 2: item_type "orders.refund" can never match: rule 1 ("orders.>") matches every item type it would; put the narrower rule first`},
		},
		{
			name: "TOMLSyntax",
			src:  lines(`[[rule]]`, `item_type = "search.*"`, `class = rebuildable`),
			want: []string{`bad.toml: line 3: TOML syntax: `},
		},
		{
			name: "TOMLDuplicateKey",
			src:  lines(`[class.manual]`, `approvals = 2`, `approvals = 3`),
			want: []string{`bad.toml: line 3: TOML syntax: `},
		},
		{
			// Lines inside a multi-line array must not be taken for keys:
			// the approvals error is on line 5, not line 3.
			name: "LinesPastMultiLineValues",
			src:  lines(`[class.manual]`, `notes = [`, `  "approvals = 1",`, `]`, `approvals = 1`, `doc = """`, `[class.rebuildable]`, `"""`, `bulk = true`),
			want: []string{
				`bad.toml: line 2: class.manual: unknown key "notes"`,
				`bad.toml: line 5: class.manual: approvals = 1 is below the minimum of 2`,
				`bad.toml: line 6: class.manual: unknown key "doc"`,
				`bad.toml: line 9: class.manual: bulk = true is not allowed for manual`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tbl, err := Parse("bad.toml", []byte(tt.src))
			if err == nil {
				t.Fatalf("Parse = %v, nil error; want an error", tbl)
			}
			if !errors.Is(err, ErrInvalidPolicy) {
				t.Errorf("errors.Is(err, ErrInvalidPolicy) = false for %v", err)
			}
			var pe *PolicyError
			if !errors.As(err, &pe) || pe.File != "bad.toml" {
				t.Errorf("errors.As(*PolicyError) failed or wrong file for %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain\n  %s\ngot:\n  %s", w, strings.ReplaceAll(err.Error(), "\n", "\n  "))
				}
			}
			// Every problem is on its own line and names the file first.
			for _, l := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(l, "bad.toml: ") {
					t.Errorf("error line %q does not start with the file name", l)
				}
			}
		})
	}
}

// TestLoadErrors checks that errors from files on disk carry the path, the
// line and the field.
func TestLoadErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name string
		src  string
		want *regexp.Regexp
	}{
		{"class.toml", lines(`[[rule]]`, `item_type = "search.*"`, `class = "rebuildabel"`), regexp.MustCompile(`class\.toml: line 3: rule 1: class "rebuildabel"`)},
		{"knob.toml", lines(``, ``, `[class.manual]`, `approvals = 1`), regexp.MustCompile(`knob\.toml: line 4: class\.manual: approvals = 1`)},
		{"syntax.toml", lines(`[[rule]`), regexp.MustCompile(`syntax\.toml: line 1: TOML syntax: `)},
		{"key.toml", lines(`[class.same_operation]`, `bulk_capp = 3`), regexp.MustCompile(`key\.toml: line 2: class\.same_operation: unknown key "bulk_capp".*did you mean "bulk_cap"`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(dir, tt.name)
			if err := os.WriteFile(path, []byte(tt.src), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			if err == nil {
				t.Fatal("Load = nil error")
			}
			if !strings.HasPrefix(err.Error(), path+": ") || !tt.want.MatchString(err.Error()) {
				t.Errorf("Load error = %q, want it to start with %q and match %s", err, path, tt.want)
			}
		})
	}
	t.Run("Missing", func(t *testing.T) {
		t.Parallel()
		_, err := Load(filepath.Join(dir, "absent.toml"))
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "load replay policy") {
			t.Errorf("Load(absent) = %v, want a wrapped fs.ErrNotExist", err)
		}
	})
}

func TestParseDefaults(t *testing.T) {
	t.Parallel()
	t.Run("EmptyFile", func(t *testing.T) {
		t.Parallel()
		tbl := mustParse(t, "")
		if len(tbl.Rules()) != 0 {
			t.Errorf("Rules() = %v, want none", tbl.Rules())
		}
		classes := tbl.Classes()
		if len(classes) != 5 {
			t.Fatalf("Classes() has %d entries, want 5", len(classes))
		}
		for i, want := range KnownClasses() {
			if classes[i].Class != want {
				t.Errorf("Classes()[%d] = %s, want %s", i, classes[i].Class, want)
			}
			def, _ := DefaultKnobs(want)
			if classes[i].Knobs != def {
				t.Errorf("class %s: %+v, want defaults %+v", want, classes[i].Knobs, def)
			}
		}
		if c, rule := tbl.ClassFor("search.index_update"); c != Manual || rule != -1 {
			t.Errorf("ClassFor with no rules = %s, %d; want manual, -1", c, rule)
		}
	})
	t.Run("PartialSection", func(t *testing.T) {
		t.Parallel()
		tbl := mustParse(t, lines(`[class.rebuildable]`, `max_rate = 6000`, `[class.revalidate]`, `bulk = false`))
		got, _ := tbl.Knobs(Rebuildable)
		want, _ := DefaultKnobs(Rebuildable)
		want.MaxRate = 6000
		if got != want {
			t.Errorf("rebuildable = %+v, want %+v", got, want)
		}
		// Without bulk the cap is one item, whatever the default cap was.
		if got, _ := tbl.Knobs(Revalidate); got.Bulk || got.BulkCap != 1 {
			t.Errorf("revalidate = %+v, want bulk false and bulk_cap 1", got)
		}
	})
	t.Run("DaysAndFloats", func(t *testing.T) {
		t.Parallel()
		tbl := mustParse(t, lines(`[class.dedupe]`, `approval_expiry = "7d"`, `default_rate = 0.5`, `max_rate = 2.5`))
		got, _ := tbl.Knobs(Dedupe)
		if got.ApprovalExpiry != 7*24*time.Hour || got.DefaultRate != 0.5 || got.MaxRate != 2.5 {
			t.Errorf("dedupe = %+v", got)
		}
	})
	t.Run("UnknownClassKnobs", func(t *testing.T) {
		t.Parallel()
		if _, ok := mustParse(t, "").Knobs("nope"); ok {
			t.Error(`Knobs("nope") reported ok`)
		}
		if _, ok := DefaultKnobs("nope"); ok {
			t.Error(`DefaultKnobs("nope") reported ok`)
		}
	})
	t.Run("RulesAreCopies", func(t *testing.T) {
		t.Parallel()
		tbl := mustParse(t, testPolicy)
		tbl.Rules()[0].Class = Manual
		if c, _ := tbl.ClassFor("search.x"); c != Rebuildable {
			t.Errorf("editing Rules() changed the table: ClassFor = %s", c)
		}
	})
}

func TestVersion(t *testing.T) {
	t.Parallel()
	base := mustParse(t, testPolicy)
	if ok, _ := regexp.MatchString(`^[0-9a-f]{64}$`, base.Version()); !ok {
		t.Fatalf("Version() = %q, want 64 hex digits", base.Version())
	}
	same := []struct {
		name string
		src  string
	}{
		{"Identical", testPolicy},
		{"CommentsAndWhitespace", "# header comment\n\n\n" + strings.ReplaceAll(testPolicy, "\n", "   # trailing\n\n")},
		{"Indentation", strings.ReplaceAll(testPolicy, "\n", "\n    ")},
		{"KeyOrderInSection", strings.Replace(testPolicy, "approvals = 2\nbulk = false", "bulk = false\napprovals = 2", 1)},
		{"SectionsBeforeRules", testPolicy[strings.Index(testPolicy, "[class.rebuildable]"):] + "\n" + testPolicy[:strings.Index(testPolicy, "[class.rebuildable]")]},
		{"DefaultsSpelledOut", strings.Replace(testPolicy, "[class.revalidate]\n", "[class.revalidate]\ndefault_rate = 10\nmax_rate = 100\ntyped_confirmation = false\n", 1)},
		{"SameDurationOtherSpelling", strings.Replace(testPolicy, `approval_expiry = "24h"`, `approval_expiry = "1440m"`, 1)},
		{"FloatForInteger", strings.Replace(testPolicy, "default_rate = 500", "default_rate = 500.0", 1)},
		{"Roundtrip", string(base.marshal())},
	}
	for _, tt := range same {
		t.Run("Same/"+tt.name, func(t *testing.T) {
			t.Parallel()
			if got := mustParse(t, tt.src).Version(); got != base.Version() {
				t.Errorf("Version() = %s, want the base version %s", got, base.Version())
			}
		})
	}
	const (
		ruleSearch    = "[[rule]]\nitem_type = \"search.*\"\nclass = \"rebuildable\"\n"
		ruleAnalytics = "[[rule]]\nitem_type = \"analytics.*\"\nclass = \"dedupe\"\n"
	)
	differ := []struct {
		name string
		src  string
	}{
		{"KnobChange", strings.Replace(testPolicy, "max_rate = 5000", "max_rate = 5001", 1)},
		{"ExpiryChange", strings.Replace(testPolicy, `approval_expiry = "4h"`, `approval_expiry = "5h"`, 1)},
		{"RuleClassChange", strings.Replace(testPolicy, `class = "dedupe"`, `class = "rebuildable"`, 1)},
		{"RuleGlobChange", strings.Replace(testPolicy, `"search.*"`, `"search.>"`, 1)},
		{"RuleOrderChange", strings.Replace(testPolicy, ruleSearch+"\n"+ruleAnalytics, ruleAnalytics+"\n"+ruleSearch, 1)},
		{"RuleAdded", testPolicy + "\n[[rule]]\nitem_type = \"billing.*\"\nclass = \"manual\"\n"},
	}
	for _, tt := range differ {
		t.Run("Differs/"+tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.src == testPolicy {
				t.Fatal("the edit did not apply to testPolicy")
			}
			if got := mustParse(t, tt.src).Version(); got == base.Version() {
				t.Errorf("Version() unchanged after %s", tt.name)
			}
		})
	}
}

// TestRateInput refuses, as typed, a rate of 0 or less, one below MinRate
// and one that is not a number; leaving it out is the class's default.
func TestRateInput(t *testing.T) {
	t.Parallel()
	for _, r := range []float64{0, -1, MinRate / 2, nan(), inf()} {
		if v := JudgeRateInput(r); v.Outcome != Block || v.Check != CheckRate {
			t.Errorf("rate %v: %+v, want refused", r, v)
		}
	}
	for _, r := range []float64{MinRate, 1, 5000} {
		if v := JudgeRateInput(r); v.Outcome != Go {
			t.Errorf("rate %v: %+v, want it taken", r, v)
		}
	}
}

func TestValidateRate(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	tests := []struct {
		name    string
		class   Class
		rate    float64
		want    float64
		wantErr string
	}{
		{"DefaultWhenZero", Rebuildable, 0, 500, ""},
		{"Explicit", Rebuildable, 42.5, 42.5, ""},
		{"AtMax", Rebuildable, 5000, 5000, ""},
		{"AboveMax", Rebuildable, 5000.5, 0, "above the max_rate of 5000"},
		{"Negative", Dedupe, -1, 0, "positive number"},
		{"NaN", Dedupe, nan(), 0, "positive number"},
		{"Inf", Dedupe, inf(), 0, "positive number"},
		{"UnknownClass", "nope", 1, 0, "unknown class"},
		{"BelowMinimum", Dedupe, MinRate / 10, 0, "at least 0.01"},
		{"AtMinimum", Dedupe, MinRate, MinRate, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tbl.ValidateRate(tt.class, tt.rate)
			if tt.wantErr == "" {
				if err != nil || got != tt.want {
					t.Errorf("ValidateRate(%s, %v) = %v, %v; want %v, nil", tt.class, tt.rate, got, err, tt.want)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalidRate) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ValidateRate(%s, %v) = %v, %v; want an ErrInvalidRate containing %q", tt.class, tt.rate, got, err, tt.wantErr)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	tests := []struct {
		class Class
		want  []string
	}{
		{Rebuildable, []string{"rebuildable: ", "replay it directly", "bulk requests up to 10000 items", "500 messages per second by default, at most 5000"}},
		{Dedupe, []string{"original message id, which is mandatory", "skipped, not re-sent"}},
		{SameOperation, []string{"operation id must be present", "one approver who is not the requester", "expires after 24h"}},
		{Revalidate, []string{"re-checks that principal's authority", "expires after 8h"}},
		{Manual, []string{"two distinct approvers, neither of them the requester", "expires after 4h", "no bulk", `"REPLAY <message id>"`, "1 message per second"}},
		{"nope", []string{`"nope" is not a replay class.`}},
	}
	for _, tt := range tests {
		got := tbl.Describe(tt.class)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("Describe(%s) = %q, want it to contain %q", tt.class, got, w)
			}
		}
		if !strings.HasSuffix(got, ".") {
			t.Errorf("Describe(%s) = %q, want a sentence ending in a period", tt.class, got)
		}
	}
}

// TestSubjectRules parses rules that match a target subject, alone or with
// an item type: the class of an item is the stricter of its item type's and
// its subject's, shadowing is checked within each kind, and files without
// subject rules keep their version.
func TestSubjectRules(t *testing.T) {
	t.Parallel()
	src := lines(
		`[[rule]]`, `item_type = "search.*"`, `subject = "app.*.billing.>"`, `class = "revalidate"`,
		`[[rule]]`, `item_type = "search.*"`, `class = "rebuildable"`,
		`[[rule]]`, `subject = "app.*.orders.>"`, `class = "manual"`,
		`[[rule]]`, `subject = "app.*.analytics.>"`, `class = "dedupe"`,
	)
	tbl, err := Parse("subjects.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		itemType, subject string
		want              Class
		bySubject         bool
	}{
		{"search.index_update", "app.acme.search.index_update", Rebuildable, false},
		{"search.index_update", "app.acme.orders.refund", Manual, true},        // an easy type cannot reach a strict subject
		{"search.index_update", "app.acme.billing.invoice", Revalidate, false}, // the type rule narrowed by subject
		{"search.index_update", "app.acme.analytics.view", Dedupe, true},       // stricter than rebuildable
		{"orders.refund", "app.acme.analytics.view", Manual, false},            // a subject never loosens
		{"unknown.type", "app.acme.search.x", Manual, false},                   // unknown types stay manual
	} {
		c := tbl.ClassOf(tt.itemType, tt.subject)
		if c.Class != tt.want || c.BySubject != tt.bySubject {
			t.Errorf("ClassOf(%q, %q) = %+v; want %s (by subject %t)", tt.itemType, tt.subject, c, tt.want, tt.bySubject)
		}
	}
	strict := testItem("search.index_update")
	strict.OriginalSubject, strict.MsgID = "app.acme.orders.refund", "m-1"
	v := JudgeItem(tbl, strict, AtDraft)
	if v.Class != Manual || !strings.Contains(v.Reason+JudgeDraft(tbl, Manual, "acme", true, []Verdict{v, v})[1].Reason, "cannot be replayed in bulk") ||
		v.prefix() != `manual (the target subject "app.acme.orders.refund" is manual by rule 3, stricter than item type "search.index_update"'s rebuildable): ` {
		t.Errorf("JudgeItem of an easy type to a strict subject: %+v, prefix %q", v, v.prefix())
	}
	if c, _ := tbl.ClassFor("search.index_update"); c != Rebuildable {
		t.Errorf("ClassFor ignores subject-narrowed rules; got %s", c)
	}
	again, err := Parse("again.toml", tbl.marshal())
	if err != nil || again.Version() != tbl.Version() {
		t.Errorf("marshal round trip: %v, version %s vs %s", err, again.Version(), tbl.Version())
	}

	old := lines(`[[rule]]`, `item_type = "search.*"`, `class = "rebuildable"`)
	a, err := Parse("a.toml", []byte(old))
	if err != nil {
		t.Fatal(err)
	}
	if want := "quarantine replaypolicy canonical v1\nrule \"search.*\" rebuildable\n"; !strings.HasPrefix(a.canonical(), want) {
		t.Errorf("a file without subject rules hashes as before: %q", a.canonical())
	}

	for name, tt := range map[string]struct{ src, want string }{
		"Neither":           {lines(`[[rule]]`, `class = "manual"`), `rule 1: item_type is missing: a rule matches an item_type, a subject, or both`},
		"BadSubject":        {lines(`[[rule]]`, `subject = "app.>.x"`, `class = "manual"`), `rule 1: subject "app.>.x" has ">" before the last token`},
		"SubjectShadow":     {lines(`[[rule]]`, `subject = "app.>"`, `class = "manual"`, `[[rule]]`, `subject = "app.acme.x"`, `class = "dedupe"`), `rule 2: subject "app.acme.x" can never match: rule 1 (subject "app.>")`},
		"RepeatedSubject":   {lines(`[[rule]]`, `item_type = "a.b"`, `subject = "x.y"`, `class = "manual"`, `[[rule]]`, `item_type = "a.b"`, `subject = "x.y"`, `class = "dedupe"`), `rule 2: item_type "a.b", subject "x.y" repeats rule 1`},
		"NarrowedAfterWide": {lines(`[[rule]]`, `item_type = "a.*"`, `class = "manual"`, `[[rule]]`, `item_type = "a.b"`, `subject = "x.y"`, `class = "dedupe"`), `rule 2: item_type "a.b", subject "x.y" can never match: rule 1 (item_type "a.*")`},
	} {
		_, err := Parse("bad.toml", []byte(tt.src))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v; want it to contain %q", name, err, tt.want)
		}
	}
	// A type rule and a subject rule with the same subject do not shadow each other.
	if _, err := Parse("ok.toml", []byte(lines(`[[rule]]`, `item_type = "a.*"`, `subject = "x.>"`, `class = "dedupe"`,
		`[[rule]]`, `subject = "x.>"`, `class = "manual"`))); err != nil {
		t.Errorf("kinds are apart: %v", err)
	}
}
