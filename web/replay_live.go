package web

import (
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/views"
)

// While a request runs, its page's progress poll (every 2 s, for every
// open page) also redraws the rows of its items and the count of those
// that came back, so that the page does not say "28 replayed · 2 to go"
// above rows still pending. Bounded so: the poll carries what the page
// shows of its items (liveStamp: its progress and a digest of each
// liveBlock rows), and reads the rows and their returns again (as the page
// does: replay.Service.Live) only when the progress changed since, or on
// every poll of a request of at most liveEvery items (whose returns may
// come back while nothing else changes); and of what it read it sends the
// rows of the blocks whose digest changed, nothing when none did.

// liveBlock is how many item rows one digest of liveStamp covers: a page
// of 20,000 items carries 200 of them in its poll's address (6 hex
// characters each), and a change redraws its block of rows, not the page.
const liveBlock = 100

// liveEvery is the most items of a request whose rows and returns the
// poll reads: at most 1,000 probes of dead_letters_replay_of_idx, a
// twentieth of the 20,000 docs/replay.md times at 0.1 to 0.4 s, and as
// many as the replays list probes for one request of its page
// (listCameBackMax). A request of at most that many is read on every poll
// (its returns may come while nothing else changes); of a bigger one the
// poll reads its first liveEvery rows, and only when its progress changed
// (which, as it runs, is nearly every poll): its other rows, and the
// returns of its other items, show on the next load. Before, a bigger
// one's poll read every row of the page (20,000) and the returns of its
// first CameBackItemsMax items on nearly every poll, of every open page
// (review round 44).
const liveEvery = 1_000

// runs says whether req's page follows its items by its poll: it was
// approved and may still publish (a request not yet approved sent
// nothing; one that ended is not polled).
func runs(req replay.Request) bool {
	return req.Status.Open() && !req.Status.Editable()
}

// liveStamp is what a request page shows of its items, carried in its
// poll's address (live=): how many need reconciliation (a settle removes
// a row's form), a digest of its progress, and one of each liveBlock of
// its rows. ok: it was read (the zero stamp redraws everything).
type liveStamp struct {
	ok        bool
	reconcile int
	progress  string
	rows      []string
}

// The widths, in hex characters, of liveStamp's digests.
const (
	progressDigestLen = 8
	rowsDigestLen     = 6
)

// String is s as the poll's address carries it; "" for the zero stamp.
func (s liveStamp) String() string {
	if !s.ok {
		return ""
	}
	return strconv.Itoa(s.reconcile) + "." + s.progress + "." + strings.Join(s.rows, "")
}

// maxLiveRows is the most row digests a stamp holds: those of a page of
// maxRequestItems rows.
const maxLiveRows = (maxRequestItems + liveBlock - 1) / liveBlock

// parseLiveStamp reads a poll's live= value; the zero stamp for one that
// is not a stamp, or holds more than a page's rows make.
func parseLiveStamp(v string) liveStamp {
	const count = 9 // digits: a request's items are far fewer
	if len(v) > count+progressDigestLen+maxLiveRows*rowsDigestLen+2 {
		return liveStamp{}
	}
	parts := strings.SplitN(v, ".", 3)
	if len(parts) != 3 || len(parts[0]) > count || len(parts[2]) > maxLiveRows*rowsDigestLen {
		return liveStamp{}
	}
	n, err := strconv.Atoi(parts[0])
	if err != nil || n < 0 || len(parts[1]) != progressDigestLen || !isHex(parts[1]) || len(parts[2])%rowsDigestLen != 0 || !isHex(parts[2]) {
		return liveStamp{}
	}
	s := liveStamp{ok: true, reconcile: n, progress: parts[1]}
	for i := 0; i < len(parts[2]); i += rowsDigestLen {
		s.rows = append(s.rows, parts[2][i:i+rowsDigestLen])
	}
	return s
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// liveStampOf is the stamp of a page that shows progress p and rows.
func liveStampOf(p replay.Progress, rows []views.ReplayItemRow) liveStamp {
	s := liveStamp{ok: true, reconcile: p.NeedsReconciliation, progress: progressDigest(p)}
	for i := 0; i < len(rows); i += liveBlock {
		h := fnv.New32a()
		for _, r := range rows[i:min(len(rows), i+liveBlock)] {
			fmt.Fprint(h, rowState(r), "\x00")
		}
		s.rows = append(s.rows, fmt.Sprintf("%06x", h.Sum32()&0xffffff))
	}
	return s
}

// progressDigest is a digest of p, every count the progress block shows.
func progressDigest(p replay.Progress) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%+v", p)
	return fmt.Sprintf("%08x", h.Sum32())
}

// rowState is what of row its verdict cell shows that a run changes: its
// outcome, why and until when, whether it is settled here, and the dead
// letter it came back as. (Its form to settle it is kept as the page has
// it: only whether there is one counts.)
func rowState(r views.ReplayItemRow) string {
	back := ""
	if b := r.CameBack; b != nil {
		back = fmt.Sprintf("%d/%s/%s/%t", b.ID, b.Status, b.ErrorClass, b.More)
	}
	return fmt.Sprintf("%d|%s|%s|%d|%s|%s|%s|%s|%s|%t|%t|%s", r.DeadLetterID, r.Outcome, r.OutcomeReason, r.Until.UnixMicro(), r.NotRun,
		r.Verdict, r.Check, r.SkipReason, r.Why, r.Edited, r.Reconcile != nil, back)
}

// changedRows are the rows of the blocks whose digest in now differs from
// the page's, was (every row, for a page whose stamp was not read).
func changedRows(rows []views.ReplayItemRow, was, now liveStamp) []views.ReplayItemRow {
	var out []views.ReplayItemRow
	for b, d := range now.rows {
		if b < len(was.rows) && was.rows[b] == d {
			continue
		}
		out = append(out, rows[b*liveBlock:min(len(rows), (b+1)*liveBlock)]...)
	}
	return out
}

// liveRead is what a poll of a running request read of its items: what
// to redraw (nil: nothing changed, or nothing was read), the page's stamp
// after it, and the progress read with the rows.
type liveRead struct {
	redraw   *views.ReplayLiveModel
	stamp    liveStamp
	progress replay.Progress
}

// replayLive reads what the page of req, a running request whose progress
// the poll read as p, shows of its items now (replay.Service.Live), when
// it may have changed since the page's stamp was: its progress did, or
// the request is small enough to read on every poll (liveEvery); and
// what of it to redraw. The rows are read as the page reads them
// (maxRequestItems, the viewer's forms and all).
func (s *Server) replayLive(c echo.Context, req replay.Request, p replay.Progress, was liveStamp) (liveRead, error) {
	limit, of := maxRequestItems, cameBackOf(req)
	if req.ItemCount+req.SkippedCount > liveEvery {
		if was.ok && was.progress == progressDigest(p) {
			return liveRead{stamp: was, progress: p}, nil
		}
		limit, of = liveEvery, liveEvery // its first rows, and the returns of those
	}
	l, err := s.deps.Replays.Live(c.Request().Context(), req.ID, limit)
	if err != nil {
		return liveRead{}, err
	}
	rows := withCameBack(s.itemRows(c, req, l.Items, nil), l.CameBack.Items)
	settler := settlerOnce(rows)
	now := liveStampOf(l.Progress, rows)
	if len(was.rows) > len(now.rows) { // the blocks past those read stay as the page has them
		now.rows = append(now.rows, was.rows[len(now.rows):]...)
	}
	out := liveRead{stamp: now, progress: l.Progress}
	if changed := changedRows(rows, was, now); len(changed) > 0 || now.progress != was.progress {
		out.redraw = &views.ReplayLiveModel{Rows: changed, CameBack: l.CameBack.Replayed, CameBackOf: of, Settler: settler}
	}
	return out, nil
}

// settlerOnce takes from rows who settles their items that need
// reconciliation, to a viewer who may not (the same for every item of a
// request: the Items section says it once); nil when no row says it.
func settlerOnce(rows []views.ReplayItemRow) *views.SettleWait {
	var w *views.SettleWait
	for i := range rows {
		if rows[i].Settler != nil {
			w, rows[i].Settler = rows[i].Settler, nil
			w.Each = true
		}
	}
	return w
}
