package replaypolicy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestRev42NoFixIsAskedWhereNoFixHelps: an item of an error class that
// replays only after a fix, which a rule of its class refuses whatever is
// fixed (a same_operation item with no operation id, a revalidate item
// with no principal, a same_operation item whose payload is not the one
// hashed at ingest), is told the rule no fix satisfies. Told to record a
// fix, the on-call recorded one for the whole item type, audited, which
// changed nothing for the item.
func TestRev42NoFixIsAskedWhereNoFixHelps(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	for name, tt := range map[string]struct {
		itemType string
		edit     func(*Item)
		check    string
	}{
		"NoOperationID":      {"email.send", func(i *Item) { i.OperationID = "" }, CheckNoOperationID},
		"NoPrincipal":        {"accounts.grant", func(i *Item) { i.Principal = "" }, CheckNoPrincipal},
		"PayloadNotAsHashed": {"email.send", func(i *Item) { i.PayloadSHA256 = "ab" }, CheckPayloadHash},
	} {
		for _, ec := range []string{ErrSchemaInvalid, ErrPermanent} {
			item := testItem(tt.itemType)
			item.ErrorClass, item.DeadLetteredAt = ec, testNow.Add(-time.Hour)
			tt.edit(&item)
			for _, at := range []Step{AtDraft, AtRequest} {
				v := JudgeItem(tbl, item, at)
				assert.Equal(t, tt.check, v.Check, "%s, %s: %s", name, ec, v.Reason)
				assert.NotContains(t, v.Reason, "record a fix", "%s, %s", name, ec)
			}
			// With a fix recorded after it, the same rule: the fix helps nothing.
			item.FixedAt, item.FixRecordedAt, item.FixRef = testNow.Add(-time.Minute), testNow.Add(-time.Minute), "v2"
			assert.Equal(t, tt.check, JudgeItem(tbl, item, AtDraft).Check, "%s, %s, fixed", name, ec)
		}
	}
	// Where the class's rules hold, the error class's is still asked.
	item := testItem("email.send")
	item.ErrorClass, item.DeadLetteredAt = ErrSchemaInvalid, testNow.Add(-time.Hour)
	assert.Equal(t, CheckNeedsFix, JudgeItem(tbl, item, AtDraft).Check)
}
