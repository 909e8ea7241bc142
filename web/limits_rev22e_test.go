package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevLimits22CloseFormReadsTheWholePayload: a dead letter's own
// discard (or resolve) form that comes back with a version that is no
// version, or confirmed at a version that changed (closeSelection's
// "version that is none" case, closeOneConflict), reads the dead letter
// with Store.Get to learn its version: every column, the whole payload,
// error, stack trace, headers and header block, which the page it renders
// does not show (it lists the dead letter through ItemsByID, cut). So a
// person with discard rights makes the console read and hold a payload of
// up to the stream's message size per POST, outside the download bounds
// (downloadBounds), as headers.json did before
// TestHeadersDownloadReadsNoPayload. Measured as the bytes the server
// allocated over the request (in process), as that test measures: not
// parallel, so that no other test's console allocates meanwhile.
//
// Severity: low/medium (memory per request, unbounded in number; the
// dead letter page itself reads at most 64 KiB of the payload).
// Expected: the version is read alone (or with Preview's cut columns).
func TestRevLimits22CloseFormReadsTheWholePayload(t *testing.T) {
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	payload := make([]byte, 12<<20)
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "idx-close-ver-1", Payload: payload})
	path := fmt.Sprintf("/deadletters/%d/discard", id)

	measure := func(t *testing.T, form url.Values, status int) uint64 {
		t.Helper()
		require.Equal(t, status, b.Do(t, oncall, "POST", path, form, nil).Status) // warm: sessions, plans
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		resp := b.Do(t, oncall, "POST", path, form, nil)
		runtime.ReadMemStats(&after)
		require.Equal(t, status, resp.Status, resp.Body)
		return after.TotalAlloc - before.TotalAlloc
	}
	t.Run("ThePageItReadsFrom", func(t *testing.T) {
		// The control: the dead letter's own page reads 64 KiB of it.
		page := fmt.Sprintf("/deadletters/%d", id)
		require.Equal(t, http.StatusOK, b.Do(t, oncall, "GET", page, nil, nil).Status)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		resp := b.Do(t, oncall, "GET", page, nil, nil)
		runtime.ReadMemStats(&after)
		require.Equal(t, http.StatusOK, resp.Status)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("dead letter page, %d-byte payload: %d KiB allocated", len(payload), alloc>>10)
		assert.Less(t, alloc, uint64(4<<20))
	})
	t.Run("VersionThatIsNone", func(t *testing.T) {
		alloc := measure(t, url.Values{"version": {"x"}, "reason": {"noise"}}, http.StatusUnprocessableEntity)
		t.Logf("discard form with version x, %d-byte payload: %d KiB allocated", len(payload), alloc>>10)
		assert.Less(t, alloc, uint64(4<<20), "the discard form's page allocated %d KiB: the %d-byte payload was read to learn the version",
			alloc>>10, len(payload))
	})
	t.Run("ConfirmedAtAnotherVersion", func(t *testing.T) {
		alloc := measure(t, url.Values{"version": {"999"}, "reason": {"noise"}, "confirmed": {"1"}}, http.StatusConflict)
		t.Logf("discard confirmed at version 999, %d-byte payload: %d KiB allocated", len(payload), alloc>>10)
		assert.Less(t, alloc, uint64(4<<20), "the conflict page allocated %d KiB: the %d-byte payload was read to learn the version",
			alloc>>10, len(payload))
	})
}

// TestRevLimits22PayloadEditBodyIsReadFarPastTheEditBound: the payload
// edit route's body limit is 3 × the NATS max_payload + 64 KiB
// (BodyPayload), but no edit over replay.MaxEditablePayload (256 KiB) is
// ever taken (payloadForm.Validate refuses it, 422): the limit predates
// that bound. So a requester's POST of up to 3 × max_payload (3 MiB with
// NATS's default 1 MiB, 24 MiB at 8 MiB, 192 MiB at 64 MiB) is read,
// held and URL-decoded whole (readForm's ParseForm: the body, its string
// and the decoded value) before it is refused, per request, with no
// bound on how many run at once; the download routes have such bounds,
// this upload none.
//
// Severity: low/medium (an authenticated requester's memory use,
// scaling with the deployment's max_payload). Expected: a body over
// what an edit at the bound can be (3 × MaxEditablePayload + 64 KiB) is
// refused 413 before it is read.
func TestRevLimits22PayloadEditBodyIsReadFarPastTheEditBound(t *testing.T) {
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, oncall := b.SignIn(t, "acme:oncall")
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "idx-edit-body-1",
		Payload: []byte(`{"doc":"small"}`)})
	_, drafts := testfactory.Draft(t, b.Replays, oncall.Actor, id)
	require.Len(t, drafts, 1)
	path := fmt.Sprintf("/replay/requests/%d/items/%d/payload", drafts[0].ID, id)
	edit := strings.Repeat("a", 8*replay.MaxEditablePayload) // 2 MiB: 8 × the largest edit taken, under 3 × max_payload
	require.Less(t, int64(len(edit)), 3*b.App.NATS.MaxPayload(), "under the route's body limit today")

	body := url.Values{"payload": {edit}, "reason": {"bigger"}}.Encode() // encoded before the count: only the server's reading is counted

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	resp := b.DoForm(t, c, "POST", path, body, nil)
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("a %d-byte edit (the bound is %d): %d, %d KiB allocated", len(edit), replay.MaxEditablePayload, resp.Status, alloc>>10)
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.Status,
		"a %d-byte payload edit, 8 × the largest edit the console takes, was read whole (%d KiB allocated) and only then refused",
		len(edit), alloc>>10)
}
