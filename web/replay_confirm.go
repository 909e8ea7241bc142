package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/views"
)

// replayConfirm shows the requester their frozen selection.
func (s *Server) replayConfirm(c echo.Context) error {
	m, err := s.confirmModel(c, "", nil)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.ReplayConfirm(s.page(c, "Confirm replay", "deadletters"), m))
}

// confirmModel builds the confirm page of the :batch parameter; only its
// requester may see it.
func (s *Server) confirmModel(c echo.Context, reason string, errs map[string]string) (views.ReplayConfirmModel, error) {
	ctx := c.Request().Context()
	batch := c.Param("batch")
	reqs, err := s.deps.Replays.Batch(ctx, batch)
	if err != nil {
		return views.ReplayConfirmModel{}, err
	}
	if !reqs[0].Requester.SameAs(userOf(c).Actor) {
		return views.ReplayConfirmModel{}, quarantine.Errorf(quarantine.ENOTFOUND, "There is no such selection.")
	}
	if reqs[0].Status != replay.StatusDraft {
		return views.ReplayConfirmModel{}, c.Redirect(http.StatusSeeOther, "/replay/requests/"+strconv.FormatInt(reqs[0].ID, 10))
	}
	table := s.deps.Replays.Policy()
	m := views.ReplayConfirmModel{Action: "/replay/batches/" + batch, Reason: reason, Errors: errs}
	for _, r := range reqs {
		items, err := s.deps.Replays.Items(ctx, r.ID, 1000)
		if err != nil {
			return m, err
		}
		g := views.ReplayGroup{RequestID: r.ID, Tenant: r.Tenant, Class: string(r.Class), Needs: describe(table, r.Class), Items: r.ItemCount, Rate: rateText(r.Rate)}
		if k, ok := table.Knobs(r.Class); ok {
			g.MaxRate = rateText(k.MaxRate)
		}
		if g.Confirmation, err = s.deps.Replays.ConfirmationFor(ctx, r.ID); err != nil {
			return m, err
		}
		for _, row := range s.itemRows(items) {
			if row.SkipReason != "" {
				g.Skipped = append(g.Skipped, row)
			} else if len(g.Sample) < 20 {
				g.Sample = append(g.Sample, row)
			}
		}
		g.Error = errs["request-"+strconv.FormatInt(r.ID, 10)]
		m.Groups = append(m.Groups, g)
		m.Total += r.ItemCount
		m.Skipped += r.SkippedCount
	}
	return m, nil
}

// replaySubmit sends the batch with the reason, rates and confirmations.
func (s *Server) replaySubmit(c echo.Context) error {
	ctx := c.Request().Context()
	reqs, err := s.deps.Replays.Batch(ctx, c.Param("batch"))
	if err != nil {
		return err
	}
	in := replay.SubmitInput{Reason: strings.TrimSpace(c.FormValue("reason")), Rates: map[int64]float64{}, Confirmations: map[int64]string{}}
	errs := map[string]string{}
	if in.Reason == "" {
		errs["reason"] = "Say why this should be replayed; approvers and auditors read it."
	}
	for _, r := range reqs {
		key := strconv.FormatInt(r.ID, 10)
		if v := strings.TrimSpace(c.FormValue("rate-" + key)); v != "" {
			rate, err := strconv.ParseFloat(v, 64)
			if err != nil || rate <= 0 {
				errs["rate-"+key] = "A rate is a number of messages per second, above 0."
			}
			in.Rates[r.ID] = rate
		}
		in.Confirmations[r.ID] = c.FormValue("confirm-" + key)
	}
	if len(errs) == 0 {
		done, err := s.deps.Replays.Submit(ctx, c.Param("batch"), userOf(c).Actor, in, authz.RequestMeta(c))
		var refused *replay.RefusedError
		switch {
		case errors.As(err, &refused):
			for id, why := range refused.Reasons {
				errs["request-"+strconv.FormatInt(id, 10)] = why
			}
		case err != nil:
			return err
		default:
			s.flash(c, "Replay requested.")
			return c.Redirect(http.StatusSeeOther, "/replay/requests/"+strconv.FormatInt(firstLive(done), 10))
		}
	}
	m, err := s.confirmModel(c, in.Reason, errs)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusUnprocessableEntity, views.ReplayConfirm(s.page(c, "Confirm replay", "deadletters"), m))
}

func firstLive(reqs []replay.Request) int64 {
	for _, r := range reqs {
		if r.Status != replay.StatusVoid {
			return r.ID
		}
	}
	return reqs[0].ID
}
