package web_test

import (
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevLimits23RequestPageReadsEveryItemsHeaders: a replay request's
// page (GET /replay/requests/:id, Service.View) while the request is
// editable, and the requester's confirm page (GET /replay/batches/:batch,
// Service.Selection), judge every live item through requestFacts
// (selectRequestFacts), which brings over each item's whole header block
// (replay_items.headers, the dead letter's headers as received) and
// json-decodes it in Go (factsOf), on every render. Drafting the same
// dead letters reads only what the rules judge of their headers, in SQL
// (headerFacts: "its thousands of headers are never brought over"), and
// the dead letter's own page reads PreviewHeadersMax of them.
//
// A producer chooses the headers (up to the stream's max_payload per
// dead letter: 8 MiB with the console's embedded NATS). A request of N
// such dead letters makes every view of its page, by its requester and by
// every approver reviewing it, read N × that into memory, outside the
// download bounds: measured here at 16 items of 512 KiB of headers each
// (8 MiB): tens of MiB allocated per GET, against well under 4 MiB for the
// dead letter's own page. At a bulk cap of thousands, one page view reads
// gigabytes. The same class of defect as round 22's close form that read
// the whole payload to learn a version (TestRevLimits22CloseFormReadsTheWholePayload).
//
// Not parallel: the bytes allocated in process are measured.
//
// Severity: medium (an on-call's or approver's page view costs memory that
// a producer scales; unbounded in number). Expected: the pages judge the
// items with what headerFacts reads in SQL (or a bounded cut), so that
// a view's memory does not grow with the headers' size.
func TestRevLimits23RequestPageReadsEveryItemsHeaders(t *testing.T) {
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, oncall := b.SignIn(t, "acme:oncall")
	const items, perHeader, headersEach = 16, 128 << 10, 4 // 512 KiB of headers per dead letter, 8 MiB in all
	var letters []testfactory.Letter
	for i := range items {
		h := map[string][]string{}
		for k := range headersEach {
			h[fmt.Sprintf("X-Trace-%d", k)] = []string{strings.Repeat(string(rune('a'+k)), perHeader)}
		}
		letters = append(letters, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: fmt.Sprintf("rev23e-hdr-%d", i),
			Payload: []byte(`{"doc":1}`), Headers: h})
	}
	ids := testfactory.DeadLetters(t, b.Pool, letters...)
	batch, drafts := testfactory.Draft(t, b.Replays, oncall.Actor, ids...)
	require.Len(t, drafts, 1)

	measure := func(t *testing.T, path string) uint64 {
		t.Helper()
		require.Equal(t, http.StatusOK, b.Do(t, c, "GET", path, nil, nil).Status, path) // warm: sessions, plans
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		resp := b.Do(t, c, "GET", path, nil, nil)
		runtime.ReadMemStats(&after)
		require.Equal(t, http.StatusOK, resp.Status, path)
		return after.TotalAlloc - before.TotalAlloc
	}
	t.Run("TheSameRequestWithSmallHeaders", func(t *testing.T) {
		// The control: the same request of dead letters with a few bytes
		// of headers each: what the pages cost without the producer's bytes.
		var small []testfactory.Letter
		for i := range items {
			small = append(small, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: fmt.Sprintf("rev23e-small-%d", i),
				Payload: []byte(`{"doc":1}`), Headers: map[string][]string{"X-Trace-0": {"a"}}})
		}
		smallBatch, smallDrafts := testfactory.Draft(t, b.Replays, oncall.Actor, testfactory.DeadLetters(t, b.Pool, small...)...)
		require.Len(t, smallDrafts, 1)
		for _, path := range []string{fmt.Sprintf("/replay/requests/%d", smallDrafts[0].ID), "/replay/batches/" + smallBatch} {
			alloc := measure(t, path)
			t.Logf("%s, %d items of a few bytes of headers: %d KiB allocated", path, items, alloc>>10)
			assert.Less(t, alloc, uint64(4<<20))
		}
	})
	t.Run("TheDeadLettersOwnPage", func(t *testing.T) {
		// The control: one of the dead letters' own page reads a preview of its headers.
		alloc := measure(t, fmt.Sprintf("/deadletters/%d", ids[0]))
		t.Logf("dead letter page, %d KiB of headers: %d KiB allocated", headersEach*perHeader>>10, alloc>>10)
		assert.Less(t, alloc, uint64(4<<20))
	})
	for name, path := range map[string]string{"RequestPage": fmt.Sprintf("/replay/requests/%d", drafts[0].ID), "ConfirmPage": "/replay/batches/" + batch} {
		t.Run(name, func(t *testing.T) {
			alloc := measure(t, path)
			t.Logf("%s, %d items of %d KiB of headers each: %d KiB allocated", path, items, headersEach*perHeader>>10, alloc>>10)
			assert.Less(t, alloc, uint64(4<<20), "%s allocated %d KiB per view: every item's %d KiB of headers read and decoded (%d items)",
				path, alloc>>10, headersEach*perHeader>>10, items)
		})
	}
}
