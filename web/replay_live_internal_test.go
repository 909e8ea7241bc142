package web

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/views"
)

// TestFixUxLiveStamp: a request page's poll carries what the page shows
// of its items (liveStamp) in its address, where anyone may write
// anything: a stamp reads back as written, and what is not one reads as
// none (the poll then redraws every row, as for a page that carried
// none), never as a part of one.
func TestFixUxLiveStamp(t *testing.T) {
	rows := make([]views.ReplayItemRow, 250)
	for i := range rows {
		rows[i] = views.ReplayItemRow{DeadLetterID: int64(i + 1), Outcome: "pending"}
	}
	s := liveStampOf(replay.Progress{Pending: 249, NeedsReconciliation: 1}, rows)
	require.Len(t, s.rows, 3, "a digest for each 100 rows")
	assert.Equal(t, s, parseLiveStamp(s.String()), "read back as written")
	assert.Empty(t, liveStamp{}.String())

	for name, v := range map[string]string{
		"Empty":          "",
		"NoParts":        "12",
		"NegativeCount":  "-1." + s.progress + ".",
		"ShortProgress":  "1.abc.",
		"UpperCase":      "1." + strings.ToUpper("abcdef01") + ".",
		"NotHex":         "1.zzzzzzzz.",
		"CutRowDigest":   "1." + s.progress + ".abcde",
		"TooLong":        "1." + s.progress + "." + strings.Repeat("a", (maxRequestItems/liveBlock+2)*rowsDigestLen),
		"ThreeDots":      "1." + s.progress + ".abcdef.abcdef",
		"NotANumber":     "x." + s.progress + ".",
		"SpaceInCounted": " 1." + s.progress + ".",
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, liveStamp{}, parseLiveStamp(v), "%q is no stamp", v)
		})
	}
}

// TestFixUxLiveChangedRows: of the rows a poll read, it redraws those of
// the blocks whose digest differs from the page's, all of them for a page
// whose stamp it could not read, and none when nothing changed.
func TestFixUxLiveChangedRows(t *testing.T) {
	rows := make([]views.ReplayItemRow, 250)
	for i := range rows {
		rows[i] = views.ReplayItemRow{DeadLetterID: int64(i + 1), Outcome: "pending"}
	}
	p := replay.Progress{Pending: 250}
	was := liveStampOf(p, rows)
	assert.Empty(t, changedRows(rows, was, was), "nothing changed")
	assert.Len(t, changedRows(rows, liveStamp{}, was), 250, "a page that carried no stamp gets every row")

	for name, change := range map[string]func(r *views.ReplayItemRow){
		"Outcome":  func(r *views.ReplayItemRow) { r.Outcome = "replayed" },
		"Reason":   func(r *views.ReplayItemRow) { r.OutcomeReason = "stored as APP:7" },
		"CameBack": func(r *views.ReplayItemRow) { r.CameBack = &views.CameBackView{ID: 9, Status: "quarantined"} },
		"SettleForm": func(r *views.ReplayItemRow) {
			r.Outcome, r.Reconcile = "needs_reconciliation", &views.ReconcileForm{DeadLetterID: r.DeadLetterID}
		},
	} {
		t.Run(name, func(t *testing.T) {
			now := append([]views.ReplayItemRow(nil), rows...)
			change(&now[230])
			got := changedRows(now, was, liveStampOf(p, now))
			require.Len(t, got, 50, "the last block, of 50 rows")
			assert.Equal(t, int64(201), got[0].DeadLetterID)
			assert.Equal(t, int64(250), got[49].DeadLetterID)
		})
	}
	// The form's content is the page's to keep (hx-preserve): what it
	// holds is no change.
	formed := append([]views.ReplayItemRow(nil), rows...)
	formed[5].Reconcile = &views.ReconcileForm{DeadLetterID: 6}
	typed := append([]views.ReplayItemRow(nil), formed...)
	typed[5].Reconcile = &views.ReconcileForm{DeadLetterID: 6, Note: "looked in the index"}
	assert.Empty(t, changedRows(typed, liveStampOf(p, formed), liveStampOf(p, typed)))
}

// FuzzParseLiveStamp: whatever a poll's address carries, reading it never
// fails, and what reads as a stamp is written back as it was read.
func FuzzParseLiveStamp(f *testing.F) {
	f.Add("0.0123abcd.abcdef")
	f.Add("3.ffffffff.")
	f.Add("")
	f.Fuzz(func(t *testing.T, v string) {
		s := parseLiveStamp(v)
		if s.ok {
			assert.Equal(t, s, parseLiveStamp(s.String()))
		}
	})
}
