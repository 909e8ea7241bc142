package replaypolicy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestRev41NeedsFixOffersOnlyARemedyTheClassHas: an item of an error
// class that replays only after a fix is told to edit its payload or
// record a fix; a same_operation item, whose payload is never edited
// (MayEditPayload refuses it), was told to edit it too, a remedy the page
// does not offer. It is now told only to record a fix.
func TestRev41NeedsFixOffersOnlyARemedyTheClassHas(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	for itemType, edit := range map[string]bool{"search.index_update": true, "analytics.event": true, "email.send": false} {
		item := testItem(itemType)
		item.ErrorClass, item.DeadLetteredAt = ErrPermanent, testNow.Add(-time.Hour)
		v := JudgeItem(tbl, item, AtDraft)
		assert.Equal(t, CheckNeedsFix, v.Check, "%s: %s", itemType, v.Reason)
		assert.Contains(t, v.Reason, "record a fix of item type", itemType)
		if edit {
			assert.Contains(t, v.Reason, "edit its payload, or record a fix", itemType)
		} else {
			assert.NotContains(t, v.Reason, "edit its payload", "%s (%s) is never edited", itemType, v.Class)
		}
	}
}
