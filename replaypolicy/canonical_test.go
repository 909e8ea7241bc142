package replaypolicy_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/replaypolicy"
)

// canonicalFile has a rule of each kind, tightened error classes, another
// generation limit and retention rules.
const canonicalFile = `
generation_limit = 5

[[rule]]
item_type = "search.*.index"
class = "rebuildable"

[[rule]]
item_type = "email.>"
subject = "mail.*.send"
class = "same_operation"

[[rule]]
subject = ">"
class = "manual"

[class.dedupe]
default_rate = 0.5
approval_expiry = "36h"

[error_class.transient]
approvals = 1

[error_class.permanent]
replay = "never"

[retention]
closed = "12h"
quarantined = "never"

[[retention.rule]]
tenant = "acme"
item_type = "billing.>"
discarded = "7d"
`

// TestCanonicalFormsReadBack: a table's and its retention terms' canonical
// texts read back as the same rules, knobs, error-class rules, generation
// limit and terms, with the same versions; any other text is refused.
func TestCanonicalFormsReadBack(t *testing.T) {
	shipped, err := os.ReadFile("../dev/policy.toml")
	require.NoError(t, err)
	for _, tc := range []struct{ name, src string }{{"Shipped", string(shipped)}, {"EveryKind", canonicalFile}, {"Empty", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			tbl, err := replaypolicy.Parse("p.toml", []byte(tc.src))
			require.NoError(t, err)
			again, err := replaypolicy.ParseCanonical("p.toml", tbl.Canonical())
			require.NoError(t, err)
			assert.Equal(t, tbl.Version(), again.Version())
			assert.Equal(t, tbl.Rules(), again.Rules())
			assert.Equal(t, tbl.Classes(), again.Classes())
			assert.Equal(t, tbl.ErrorRules(), again.ErrorRules())
			assert.Equal(t, tbl.GenerationLimit(), again.GenerationLimit())
			assert.Equal(t, tbl.UnlistedSubjects(), again.UnlistedSubjects())
			for _, k := range []replaypolicy.Key{{ItemType: "search.x.index", Subject: "app.x"}, {ItemType: "email.send", Subject: "mail.acme.send"}} {
				assert.Equal(t, tbl.Classify(k), again.Classify(k), "%+v", k)
			}

			r := tbl.Retention()
			terms, err := replaypolicy.ParseRetentionCanonical(r.Canonical())
			require.NoError(t, err)
			assert.Equal(t, r.Canonical(), terms.Canonical())
			assert.Equal(t, r.Lines(), terms.Lines())
			for _, st := range replaypolicy.RetentionStatuses {
				want, _ := r.For("acme", "billing.invoice", st)
				got, _ := terms.For("acme", "billing.invoice", st)
				assert.Equal(t, want, got, st)
			}
		})
	}

	tbl, err := replaypolicy.Parse("p.toml", []byte(canonicalFile))
	require.NoError(t, err)
	text, terms := tbl.Canonical(), tbl.Retention().Canonical()
	for _, tc := range []struct{ name, text string }{
		{"Empty", ""},
		{"NoFinalLineBreak", strings.TrimSuffix(text, "\n")},
		{"OtherFormat", strings.Replace(text, "canonical v1", "canonical v2", 1)},
		{"ExtraSpace", strings.Replace(text, "rule ", "rule  ", 1)},
		{"UnknownLine", text + "rate 5\n"},
		{"MissingClass", strings.Replace(text, "class manual", "# manual", 1)},
		{"DefaultGenerationLimitSpelledOut", strings.Replace(text, "generation_limit=5", "generation_limit=3", 1)},
		{"RateSpelledOtherwise", strings.Replace(text, "default_rate=0.5", "default_rate=0.50", 1)},
		{"BadGlob", strings.Replace(text, `"search.*.index"`, `"search..index"`, 1)},
	} {
		t.Run("Refuses"+tc.name, func(t *testing.T) {
			_, err := replaypolicy.ParseCanonical("p.toml", tc.text)
			assert.True(t, errors.Is(err, replaypolicy.ErrNotCanonical), "%v", err)
		})
	}
	for _, tc := range []struct{ name, text string }{
		{"Empty", ""},
		{"NoDefaults", strings.Replace(terms, "default", "section", 1)},
		{"UnknownKey", strings.Replace(terms, "discarded=", "purged=", 1)},
		{"PeriodSpelledOtherwise", strings.Replace(terms, "12h0m0s", "720m", 1)},
	} {
		t.Run("RefusesTerms"+tc.name, func(t *testing.T) {
			_, err := replaypolicy.ParseRetentionCanonical(tc.text)
			assert.True(t, errors.Is(err, replaypolicy.ErrNotCanonical), "%v", err)
		})
	}
}

// TestRetentionCanonicalKeepsItsDefaults: terms read back from their text
// fall back on the defaults the text recorded, not this release's.
func TestRetentionCanonicalKeepsItsDefaults(t *testing.T) {
	text := "quarantine retention terms 1\ndefault closed=24h0m0s unresolved=48h0m0s\nsection quarantined=never\n"
	r, err := replaypolicy.ParseRetentionCanonical(text)
	require.NoError(t, err)
	assert.Equal(t, text, r.Canonical())
	k, ok := r.For("acme", "x", "resolved")
	require.True(t, ok)
	assert.Equal(t, "24h", k.String())
	k, _ = r.For("acme", "x", "replay_failed")
	assert.Equal(t, "2d", k.String())
	k, _ = r.For("acme", "x", "quarantined")
	assert.True(t, k.Forever)
}
