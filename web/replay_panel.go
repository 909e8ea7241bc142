package web

import (
	"fmt"
	"net/url"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/views"
)

// maxShownFixes bounds the fixes the detail page lists.
const maxShownFixes = 5

// replayPanel is the detail page's actions: replay (what its class needs),
// discard and resolve, the replay requests that include it and what became
// of it in each, the replay chain it is part of, and the fixes recorded for
// its item type (with the form to record one, as typed in fix); each
// control only when the user may use it in the dead letter's tenant. found
// is what readDeadLetterPage read.
func (s *Server) replayPanel(c echo.Context, found *foundDeadLetter, fix *views.FixForm) templ.Component {
	d := found.deadLetter
	u := userOf(c)
	table := s.deps.Replays.Policy()
	class := table.Classify(replaypolicy.Key{ItemType: d.ItemType, Subject: d.OriginalSubject, ErrorClass: string(dlq.UnreadableErrorClass(d.ErrorClass, d.Flags)),
		Generation: found.generation()}).Class
	open := d.Status.Closable()
	m := views.DeadLetterActions{
		ID: d.ID, Version: d.Version, Tenant: d.Tenant, Status: string(d.Status), Class: string(class),
		CanReplay:  open && s.deps.Access.Can(u, d.Tenant, authz.ReplayObject(string(class)), authz.ActRequest),
		ReplayURL:  "/replay",
		CanDiscard: open && s.deps.Access.Can(u, d.Tenant, authz.ObjDeadLetter, authz.ActDiscard),
		DiscardURL: fmt.Sprintf("/deadletters/%d/discard", d.ID),
		CanResolve: open && s.deps.Access.Can(u, d.Tenant, authz.ObjDeadLetter, authz.ActResolve),
		ResolveURL: fmt.Sprintf("/deadletters/%d/resolve", d.ID),
	}
	if v := found.verdict; open && found.judged && v.Outcome != replaypolicy.Go {
		m.Refused, m.RefusedBy = v.Reason, v.Check
		// An edit on the confirm page may still let it go; nothing else
		// the requester does there can.
		m.CanReplay = m.CanReplay && v.Check == replaypolicy.CheckNeedsFix && replaypolicy.MayEditPayload(v.Class, u.Actor, u.Actor).Outcome == replaypolicy.Go
	}
	for _, r := range found.requests {
		m.Requests = append(m.Requests, views.ApprovalRow{
			ID: r.ID, URL: fmt.Sprintf("/replay/requests/%d", r.ID), Requester: r.Requester.Display(),
			Needs: string(r.Status), Class: string(r.Class),
		})
		o := s.itemRow(c, r, found.items[r.ID], replaypolicy.Verdict{})
		if o.Settler != nil {
			m.Settler, o.Settler = o.Settler, nil // the panel's alert says it, once
		}
		m.Outcomes = append(m.Outcomes, o)
	}
	m.ChainMore, m.ChainEarlier = found.chain.More, found.chain.Earlier
	for _, l := range found.chain.Links {
		m.Chain = append(m.Chain, views.ChainLinkView{ID: l.ID, URL: deadLetterURL(l.ID), Generation: l.Generation, Status: string(l.Status),
			At: l.DeadLetteredAt, Error: l.Error, Current: l.ID == d.ID})
	}
	for _, f := range found.fixes {
		scope := "item type"
		if f.Fingerprint != "" {
			scope = "error group"
		}
		m.Fixes = append(m.Fixes, views.FixView{Scope: scope, FixedAt: f.FixedAt, Ref: f.Ref, Note: f.Note, By: f.Author(),
			Covers: replaypolicy.FixCovers(f.FixedAt, f.CreatedAt, dlq.DeadLetteredBy(d.DeadLetteredAt, d.ReceivedAt, d.Flags))})
	}
	if s.deps.Access.Can(u, d.Tenant, authz.ObjDeadLetter, authz.ActFix) {
		m.Fix = fixFormFor(d.ID, d.Tenant, d.ItemType, d.Fingerprint, authz.Now(c.Request().Context()), fix)
	}
	return views.DeadLetterActionsPanel(m)
}

// fixFormFor is the form that records a fix for the item type (or error
// group) of dead letter id, with what was typed (typed, nil: nothing) and
// the page it goes back to. now (authz.Now: the clock the fix's time is
// judged by) is the time it offers.
func fixFormFor(id int64, tenant, itemType, fingerprint string, now time.Time, typed *views.FixForm) *views.FixForm {
	f := &views.FixForm{DeadLetterID: id, URL: fmt.Sprintf("/deadletters/%d/fix", id), Tenant: tenant, ItemType: itemType, Fingerprint: fingerprint, Now: now}
	if typed != nil {
		f.Errors, f.Values, f.ReturnTo = typed.Errors, typed.Values, typed.ReturnTo
	}
	return f
}

// bulkActions is the list's selection form: replay or close the checked
// rows, or act on everything the current filter selects; nil for people
// who may do none of it (the list then shows no checkboxes).
func (s *Server) bulkActions(c echo.Context, q url.Values, m views.DeadLetterListModel) templ.Component {
	u := userOf(c)
	b := views.BulkActionsModel{
		CanReplay:  PermittedSomewhere(s.deps.Access, u, Permission{Object: replayObjects, Action: authz.ActRequest}),
		CanDiscard: s.deps.Access.CanSomewhere(u, authz.ObjDeadLetter, authz.ActDiscard, nil),
		CanResolve: s.deps.Access.CanSomewhere(u, authz.ObjDeadLetter, authz.ActResolve, nil),
		ReturnTo:   views.PathDeadLetters + encodeQuery(q),
		Empty:      len(m.Rows) == 0,
	}
	if !b.CanReplay && !b.CanDiscard && !b.CanResolve {
		return nil
	}
	if filter := listFilter(q); len(filter) > 0 && len(m.Rows) > 0 {
		b.FilterQuery = encodeQuery(filter)
		if m.Counted {
			b.Matching = views.CappedCount(m.Count, m.CountCapped)
		}
	}
	return views.DeadLetterBulkActions(b)
}
