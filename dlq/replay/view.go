package replay

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// ViewOptions bound what a View reads.
type ViewOptions struct {
	Items    int // the first items of the request to read
	Payloads int // read the payloads the viewer may edit when the request has at most this many items
}

// View is a request as one person's page shows it, read in one
// transaction: the request, its first items, approvals and progress, what
// it needs now as the viewer sees it, and what the replay rules let the
// viewer do besides their roles.
type View struct {
	Request   Request
	Items     []Item
	Approvals []Approval
	Progress  Progress
	Decision  replaypolicy.Decision
	// Reviewer: the viewer is not the requester, so they may approve or
	// reject (separation of duties). Canceller: they may cancel it (its
	// requester, while it is open).
	Reviewer  bool
	Canceller bool
	// Payloads are the payloads the viewer may still edit, by dead letter:
	// the requester's live items before approval, in a class whose payloads
	// may be edited, when the request is small enough (ViewOptions).
	Payloads map[int64][]byte
}

// Editable is the state in which a request's payloads may be edited.
func (s Status) Editable() bool { return s == StatusDraft || s == StatusPendingApproval }

// read runs f in a read-only transaction that sees one snapshot.
func (s *Service) read(ctx context.Context, f func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, f)
}

// The payloads of a request's live items, in order.
const selectLivePayloads = `SELECT dead_letter_id, payload FROM replay_items
    WHERE request_id = $1 AND skip_reason = '' ORDER BY position LIMIT $2`

// View reads request id as viewer sees it (not_found when there is none).
func (s *Service) View(ctx context.Context, id int64, viewer quarantine.Actor, opts ViewOptions) (View, error) {
	var v View
	err := s.read(ctx, func(tx pgx.Tx) error {
		req, err := getRequest(ctx, tx, id, false)
		if err != nil {
			return err
		}
		v.Request = req
		if v.Items, err = requestItems(ctx, tx, id, opts.Items); err != nil {
			return err
		}
		if v.Approvals, err = approvals(ctx, tx, id); err != nil {
			return err
		}
		if v.Progress, err = progress(ctx, tx, id); err != nil {
			return err
		}
		if v.Decision, err = s.decide(ctx, tx, req, viewer); err != nil {
			return err
		}
		v.Reviewer = replaypolicy.MayApprove(policyRequest(req, nil), viewer).Outcome == replaypolicy.Go
		v.Canceller = req.Status.Open() && replaypolicy.MayCancel(req.Requester, viewer).Outcome == replaypolicy.Go
		if !req.Status.Editable() || req.ItemCount > opts.Payloads ||
			replaypolicy.MayEditPayload(req.Class, req.Requester, viewer).Outcome != replaypolicy.Go {
			return nil
		}
		rows, err := tx.Query(ctx, selectLivePayloads, id, opts.Payloads)
		if err != nil {
			return err
		}
		v.Payloads = map[int64][]byte{}
		var dl int64
		var p []byte
		_, err = pgx.ForEachRow(rows, []any{&dl, &p}, func() error {
			v.Payloads[dl] = p
			return nil
		})
		return err
	})
	if err != nil {
		return View{}, fmt.Errorf("view replay %d: %w", id, err)
	}
	return v, nil
}

// Selection is a frozen selection as its requester reviews it: its
// requests, each with its first items and the phrase to type, if any.
type Selection struct {
	Requests []SelectionRequest
}

// SelectionRequest is one request of a selection.
type SelectionRequest struct {
	Request
	Items        []Item
	Confirmation string
}

// Submitted reports whether the selection was submitted already.
func (s Selection) Submitted() bool {
	for _, r := range s.Requests {
		if r.Status != StatusDraft {
			return true
		}
	}
	return false
}

// Landing is the request to show for a submitted selection (see Landing).
func (s Selection) Landing() int64 {
	reqs := make([]Request, len(s.Requests))
	for i, r := range s.Requests {
		reqs[i] = r.Request
	}
	return Landing(reqs)
}

// Landing is the request to show for the requests of a submitted
// selection: the first that is not void.
func Landing(reqs []Request) int64 {
	for _, r := range reqs {
		if r.Status != StatusVoid {
			return r.ID
		}
	}
	return reqs[0].ID
}

// Selection reads batch as viewer reviews it, with the first items of
// each request, in one transaction. It is not_found for anyone but the
// requester.
func (s *Service) Selection(ctx context.Context, batch string, viewer quarantine.Actor, items int) (Selection, error) {
	var sel Selection
	err := s.read(ctx, func(tx pgx.Tx) error {
		reqs, err := batchRequests(ctx, tx, selectBatch, batch)
		if err != nil {
			return err
		}
		for _, r := range reqs {
			if replaypolicy.MaySubmit(r.Requester, viewer).Outcome != replaypolicy.Go {
				return fmt.Errorf("replay batch %q: %w", batch, errNoBatch) // someone else's selection does not exist for you
			}
			sr := SelectionRequest{Request: r}
			if sr.Items, err = requestItems(ctx, tx, r.ID, items); err != nil {
				return err
			}
			if sr.Confirmation, err = s.confirmation(ctx, tx, r); err != nil {
				return err
			}
			sel.Requests = append(sel.Requests, sr)
		}
		return nil
	})
	if err != nil {
		return Selection{}, fmt.Errorf("read selection: %w", err)
	}
	return sel, nil
}
