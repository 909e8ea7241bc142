package web

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// replayFilter replays what a list filter selects (from the list or an
// error group): the filter in the query string is resolved now to an exact
// set of ids, which the confirm page shows; later arrivals are never added.
// The filter is read over the tenants where the person may read, as the
// list that offered it counts "all matching"; what it selects that is not
// drafted is named on the confirm page as a close by filter names it
// (filterLeftOut): in a tenant where they may not request replays, with
// its tenant; in their own tenants, in a status a replay cannot take,
// with its status (or the request that holds it). The page's "Left out:
// N of the M matching" then counts M as the list does.
func (s *Server) replayFilter(c echo.Context) error {
	ctx := c.Request().Context()
	u := userOf(c)
	f, err := bulkFilter(c.QueryParams(), s.deadLetterTenants(ctx, u, authz.ActRead), authz.Now(ctx))
	if err != nil {
		return err
	}
	left, err := s.filterLeftOut(c, f, s.replayScope(ctx, u, authz.ActRequest), "request replays")
	if err != nil {
		return err
	}
	// Only what a new request could take: in the tenants where the person
	// may request replays, quarantined or replay failed (a dead letter in a
	// request already, or closed, is never selected to be refused).
	f.Tenants = s.requestTenants(ctx, u, f.Tenants)
	back := actionReturn(c)
	var ids []int64
	if f.Statuses = replayableOf(f.Statuses); len(f.Statuses) > 0 && len(f.Tenants) > 0 {
		if ids, err = replay.MatchingIDs(ctx, s.deps.DeadLetters, f, replay.MaxSelection); err != nil {
			if quarantine.ErrorCode(err) != quarantine.EINVALID {
				return err
			}
			// Too many for one request: back to the list, which keeps
			// the filter to narrow, with why.
			s.flashError(c, "Nothing was drafted: "+quarantine.ErrorMessage(err)+" (a time range, a subject or an item type), and replay it in parts.")
			return c.Redirect(http.StatusSeeOther, back)
		}
	}
	if left != nil {
		left.Of += len(ids)
	}
	if len(ids) == 0 {
		// As a close by filter does: back to the list, which shows what
		// the filter selects now (an error group all dealt with since).
		msg := "The filter selects no dead letter a replay could take (quarantined or replay failed, in a tenant where you may request replays): nothing to replay."
		if left != nil {
			if more := leftOutSentence(left); more != "" {
				msg += " " + more
			}
		}
		s.flashError(c, msg)
		return c.Redirect(http.StatusSeeOther, back)
	}
	return s.startReplay(c, ids, c.FormValue("reason"), back, left)
}

// bulkFilter reads the list filter a bulk action by filter names in its
// query string, over tenants, as the list does (readDeadLetterFilter): a
// broken one, or one with a parameter the list does not know, is an
// invalid error naming its fields; and a bulk action needs a filter
// (everything is selected explicitly or not at all).
func bulkFilter(q url.Values, tenants []string, now time.Time) (dlq.ListFilter, error) {
	form := readDeadLetterFilter(q, now)
	f, errs := form.Validate(tenants)
	if errs != nil {
		return f, quarantine.Errorf(quarantine.EINVALID, "The filter is not valid: %s", strings.Join(errorTexts(errs), "; "))
	}
	if !form.Filtered() {
		return f, quarantine.Errorf(quarantine.EINVALID, "Filter the list first; to act on everything, select it explicitly.")
	}
	return f, nil
}

// replayableOf are the statuses of statuses a new replay request may take
// (replay.ReplayableStatuses; all of them when statuses is empty: any
// status); none when the filter's statuses hold none of them.
func replayableOf(statuses []dlq.Status) []dlq.Status {
	if len(statuses) == 0 {
		return replay.ReplayableStatuses
	}
	var out []dlq.Status
	for _, st := range statuses {
		if slices.Contains(replay.ReplayableStatuses, st) {
			out = append(out, st)
		}
	}
	return out
}
