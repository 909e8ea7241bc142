package web

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/views"
)

// maxListedEdits bounds the diffs a row of the approvals list shows.
const maxListedEdits = 3

// The approvals list lists many requests, each with the diffs of its
// first edits, which a requester chooses: it compares within bounds of its
// own, sides up to listDiffBytes (it reads no more of them), listDiffTime
// of comparing and listDiffLines of diff in all. Past them an edit's diff
// is left to its request's page, which compares what a browser edit holds
// and is where it is approved.
const (
	listDiffBytes = 16 << 10
	listDiffTime  = 500 * time.Millisecond
	listDiffLines = 2000
)

// diffBudget is what the approvals list has left of listDiffTime (until)
// and listDiffLines (lines).
type diffBudget struct {
	until time.Time
	lines int
}

// diff is e's diff for the list, or where it is shown (page) when the list
// does not compare it.
func (b *diffBudget) diff(e replay.Edit, page string) views.PayloadDiff {
	if e.OriginalSize > views.MaxDiffBytes || e.EditedSize > views.MaxDiffBytes {
		// Not compared on the request's page either: said as it says it.
		return views.PayloadDiff{TooLarge: true, OriginalSize: e.OriginalSize, EditedSize: e.EditedSize}
	}
	elsewhere := views.PayloadDiff{Elsewhere: page, OriginalSize: e.OriginalSize, EditedSize: e.EditedSize}
	left := time.Until(b.until)
	if e.OriginalSize > listDiffBytes || e.EditedSize > listDiffBytes || left <= 0 || b.lines <= 0 {
		return elsewhere
	}
	d := views.NewPayloadDiffWithin(e.Original, e.Edited, e.OriginalSize, e.EditedSize, left)
	if len(d.Lines) > b.lines {
		b.lines = 0
		return elsewhere
	}
	b.lines -= len(d.Lines)
	return d
}

// approvalPageSize is how many requests the approvals page lists at a
// time.
const approvalPageSize = 100

// approvalCursor is the approvals page's "after": when the last request of
// the page before began to wait (Unix microseconds, PostgreSQL's
// precision) and its id.
var approvalCursor = regexp.MustCompile(`^([0-9]{1,18})-([1-9][0-9]{0,17})$`)

// readApprovalCursor reads the approvals page's "after" (empty: the first
// page), or returns an invalid error for a broken one.
func readApprovalCursor(v string) (replay.WaitingCursor, error) {
	if v == "" {
		return replay.WaitingCursor{}, nil
	}
	m := approvalCursor.FindStringSubmatch(v)
	if m == nil {
		return replay.WaitingCursor{}, quarantine.Errorf(quarantine.EINVALID, "The page link is broken; start from the first page.")
	}
	us, _ := strconv.ParseInt(m[1], 10, 64) // at most 18 digits
	id, _ := strconv.ParseInt(m[2], 10, 64)
	return replay.WaitingCursor{Since: time.UnixMicro(us), ID: id}, nil
}

// approvalList shows requests waiting for approval of a class in a tenant
// where the viewer may approve it, the longest waiting first, with their
// age, expiry and approvals so far, a page at a time; the page says how
// many more wait after it.
func (s *Server) approvalList(c echo.Context) error {
	ctx := c.Request().Context()
	u, me := userOf(c), userOf(c).Actor
	after, err := readApprovalCursor(c.QueryParam("after"))
	if err != nil {
		return err
	}
	waiting, err := s.deps.Replays.Waiting(ctx, replay.WaitingFilter{May: s.classScopes(ctx, u, authz.ActApprove), After: after,
		Limit: approvalPageSize})
	if err != nil {
		return err
	}
	table := s.deps.Replays.Policy()
	m := views.ApprovalsModel{Now: authz.Now(ctx), More: waiting.More, Later: !after.Since.IsZero()}
	if next := waiting.Next(); next.ID != 0 {
		m.NextURL = fmt.Sprintf("%s?after=%d-%d", views.PathApprovals, next.Since.UnixMicro(), next.ID)
	}
	if m.Later {
		m.FirstURL = views.PathApprovals
	}
	known := s.viewerOf(c).known // the viewer as Approve judges them (viewerMayApprove)
	budget := &diffBudget{until: time.Now().Add(listDiffTime), lines: listDiffLines}
	for _, r := range waiting.Requests {
		row := views.ApprovalRow{
			ID: r.ID, URL: fmt.Sprintf("/replay/requests/%d", r.ID), Tenant: r.Tenant, Class: string(r.Class),
			Items: r.Items.String(), Requester: r.Requester.Display(), Reason: r.Reason, Intent: r.IntentHex(),
			Created: r.CreatedAt, Needs: describe(table, r.Class, r.Classes), Own: s.viewerMayApprove(c, r.Request).Outcome != replaypolicy.Go, Edited: r.PayloadEdited,
			Approvals: r.Count.String(), Expires: r.Expires,
		}
		row.OtherAccount = row.Own && !r.Requester.SameIdentity(me)
		if r.SubmittedAt != nil {
			row.Submitted = *r.SubmittedAt
		}
		if s.deps.Replays.ApprovedBy(r.SeenBy(known), r.Approvals, me) {
			// Still listed: it waits for someone else, and the page says so
			// (the navigation's count leaves it out).
			row.YouApproved, row.StillNeeded = true, max(0, r.Count.Needed-r.Count.Have)
		}
		if r.PayloadEdited {
			edits, err := s.deps.Replays.Edits(ctx, r.ID, maxListedEdits+1, listDiffBytes)
			if err != nil {
				return err
			}
			if len(edits) > maxListedEdits {
				edits, row.MoreEdits = edits[:maxListedEdits], true
			}
			download := s.mayDownload(u, r.Tenant)
			row.Edits = editViewsBy(r.ID, edits, download, func(e replay.Edit) views.PayloadDiff { return budget.diff(e, row.URL) })
		}
		m.Rows = append(m.Rows, row)
	}
	return s.render(c, http.StatusOK, views.Approvals(s.page(c, "Approvals", "approvals"), m))
}
