package replay

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// ViewOptions bound what a View reads.
type ViewOptions struct {
	Items    int // the first items of the request to read
	Payloads int // read the payloads the viewer may edit when the request has at most this many items
	Edits    int // the edited items to read with both payloads, for their diffs
	// Shown is how many of the first live items to read the payload of
	// for reviewers, each up to ShownBytes.
	Shown, ShownBytes int
}

// ShownPayload is the start of an item's payload as it will be sent (up
// to ViewOptions.ShownBytes) and its whole size.
type ShownPayload struct {
	Data []byte
	Size int
	// Removed: retention removed the dead letter, and with it the payload
	// (an edited copy too): nothing of it is left to show.
	Removed bool
}

// View is a request as one person's page shows it, read in one
// transaction: the request, its first items, approvals and progress, what
// it needs now as the viewer sees it, and what the replay rules let the
// viewer do besides their roles.
type View struct {
	Request   Request
	Items     []Item
	Approvals []Approval
	// Count is the approvals so far of the approvals needed (CountOf).
	Count    ApprovalCount
	Progress Progress
	// Decision is what the request needs now (every live item judged as it
	// stands), and Now the verdicts on the shown live items, while the
	// request is not yet approved (a draft or waiting for approval).
	Decision replaypolicy.Decision
	Now      map[int64]replaypolicy.Verdict
	// HeldTo is every class the request is held to besides its class
	// (heldTo): a draft's as its items are classed now, a submitted
	// one's as its submit stored them (Request.Classes).
	HeldTo []replaypolicy.Class
	// Edits are the edited items (the first ViewOptions.Edits), with the
	// original and the edited payload; Edited counts every edited item.
	Edits  []Edit
	Edited int
	// Shown are the payloads reviewers read, by dead letter.
	Shown map[int64]ShownPayload
	// Failures are why the dead letters of the items read failed, by dead
	// letter (ItemFailures).
	Failures map[int64]Failure
	// CameBack are the items read whose replay came back as a new dead
	// letter, and how many of its first CameBackItemsMax items counted
	// replayed did.
	CameBack CameBacks
	// Reviewer: the viewer is not the requester, so they may approve or
	// reject (separation of duties). Canceller: they may cancel it (its
	// requester, while it is open).
	Reviewer  bool
	Canceller bool
	// Payloads are the payloads the viewer may still edit, by dead letter:
	// the requester's live items before approval, and left-out items that
	// hold an edit (LivePayload.UndoOnly), in a class whose payloads may be
	// edited, when the request is small enough (ViewOptions).
	Payloads map[int64]LivePayload
	// Undo says, with Payloads, what undoing each edit would do, by dead
	// letter.
	Undo map[int64]UndoPreview
}

// MaxEditablePayload is the largest payload a person edits in the browser
// (256 KiB): a bigger one is not put into a page's form (it would be the
// page, escaped, up to 20 times), and an edit may not make one (web's form
// limit). A bigger payload is fixed at its producer and published again.
const MaxEditablePayload = 256 << 10

// LivePayload is a payload its requester may edit: Data is all of it when
// it is at most MaxEditablePayload bytes and nil otherwise, Size its size
// (0 for a dead letter retention removed). UndoOnly: the item was left out
// and holds an edit, which sends nothing: the edit (Data) can be undone,
// not changed (ChangePayload edits only a live item, or one of a draft
// left out until an edit lets it go).
type LivePayload struct {
	Data     []byte
	Size     int
	UndoOnly bool
}

// Editable reports whether p is small enough to edit in the browser.
func (p LivePayload) Editable() bool { return p.Size <= MaxEditablePayload }

// Edit is one item whose payload the requester replaced, and why.
type Edit struct {
	DeadLetterID int64
	MsgID        string // cut to dlq.ListTextChars, as the items' are
	Reason       string
	// Original and Edited are the starts of both payloads, up to one byte
	// more than EditDiffBytes (the diffs compare no more); OriginalSize and
	// EditedSize their whole sizes.
	Original, Edited         []byte
	OriginalSize, EditedSize int
	// OriginalSHA256 was taken at ingest; EditedSHA256 is what the intent
	// holds and the replayed message carries (Dlq-Payload-Edited).
	OriginalSHA256, EditedSHA256 []byte
}

// EditDiffBytes is how much of each payload of an edit a request's page
// compares (views.MaxDiffBytes): as much as a payload edited in the
// browser may hold, so that every edit made there is shown to its
// approver. View reads one byte more, so that a longer side is known to
// be longer without reading it.
const EditDiffBytes = MaxEditablePayload

// Editable is the state in which a request's payloads may be edited.
func (s Status) Editable() bool { return replaypolicy.RequestEditable(string(s)) }

// read runs f in a read-only transaction that sees one snapshot.
func (s *Service) read(ctx context.Context, f func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, f)
}

const (
	// The payloads of a request's live items as they would be sent, in order,
	// those of more than $4 bytes (MaxEditablePayload) as their size alone
	// (none for a dead letter retention removed). In a draft, also those
	// left out until an edit (or a fix) lets them go; and the edits of
	// items left out all the same, which can only be undone (selectEditable).
	selectLivePayloads = `SELECT i.dead_letter_id, CASE WHEN octet_length(p.payload) <= $4 THEN p.payload END,
            coalesce(octet_length(p.payload), 0), p.undo_only
        FROM replay_items i LEFT JOIN dead_letters d ON d.id = i.dead_letter_id AND d.dead_lettered_at = i.dead_lettered_at
        CROSS JOIN LATERAL (SELECT coalesce(i.payload, d.payload) AS payload,
            i.skip_reason <> '' AND NOT ($3 AND i.verdict_check = 'error-class-fix') AS undo_only) p
        WHERE i.request_id = $1 AND (i.skip_reason = '' OR ($3 AND i.verdict_check = 'error-class-fix') OR i.payload IS NOT NULL)
        ORDER BY i.position LIMIT $2`
	// Every edited item, counted.
	countEdits = `SELECT count(*) FROM replay_items WHERE request_id = $1 AND payload IS NOT NULL`
	// The start of the payloads the first live items send, and their sizes;
	// of a dead letter retention removed, that it was.
	selectShownPayloads = `SELECT i.dead_letter_id, substring(coalesce(i.payload, d.payload) FROM 1 FOR $3),
            coalesce(octet_length(coalesce(i.payload, d.payload)), 0), d.id IS NULL AND i.payload IS NULL
        FROM replay_items i LEFT JOIN dead_letters d ON d.id = i.dead_letter_id AND d.dead_lettered_at = i.dead_lettered_at
        WHERE i.request_id = $1 AND i.skip_reason = '' ORDER BY i.position LIMIT $2`
	// Why the dead letters of a request's first items failed: the error
	// class and the start of the error; of a dead letter retention
	// removed, that it was.
	selectFailures = `SELECT i.dead_letter_id, coalesce(d.error_class, ''), coalesce(left(d.error, $3), ''), coalesce(char_length(d.error) > $3, false),
            d.id IS NULL FROM replay_items i
        LEFT JOIN dead_letters d ON d.id = i.dead_letter_id AND d.dead_lettered_at = i.dead_lettered_at
        WHERE i.request_id = $1 ORDER BY i.position LIMIT $2`
	// Edited items with the starts of both payloads ($3 bytes: a diff
	// compares no more) and their sizes, which octet_length reads from the
	// stored value's header, not the value (the original is gone with a
	// dead letter retention removed, and so is the edited copy).
	selectEdits = `SELECT i.dead_letter_id, left(i.msg_id, $4), i.edit_reason,
            substring(d.payload FROM 1 FOR $3), substring(i.payload FROM 1 FOR $3),
            coalesce(octet_length(d.payload), 0), octet_length(i.payload), d.payload_sha256, i.payload_sha256
        FROM replay_items i LEFT JOIN dead_letters d ON d.id = i.dead_letter_id AND d.dead_lettered_at = i.dead_lettered_at
        WHERE i.request_id = $1 AND i.payload IS NOT NULL ORDER BY i.position LIMIT $2`
	// The items of a request as its pages show them (shownItemColumns).
	selectShownItems = `SELECT ` + shownItemColumns + `, ` + outcomeColumns + `, ` + cutColumns + ` FROM replay_items i
        LEFT JOIN replay_jobs j ON j.request_id = i.request_id AND j.dead_letter_id = i.dead_letter_id
        WHERE i.request_id = $1 ORDER BY i.position LIMIT $2`
)

// View reads request id as viewer sees it (not_found when there is none),
// judged with the viewer's addresses (View.Request is Request.SeenBy
// them). Of a request hidden from viewer (Request.HiddenFrom: someone
// else's, never submitted) it reads the request's row alone, none of its
// items, edits or payloads: the caller answers not found, and audits the
// attempt, as for any object outside the viewer's scope.
func (s *Service) View(ctx context.Context, id int64, viewer quarantine.Actor, opts ViewOptions) (View, error) {
	var v View
	err := s.read(ctx, func(tx pgx.Tx) error {
		req, err := getRequest(ctx, tx, id, false)
		if err != nil {
			return err
		}
		// Judged with the viewer as the person behind every address the
		// console has seen them with, and as the directory has them now, as
		// Approve and Reconcile judge them.
		var viewerNow quarantine.Actor
		if req, viewerNow, err = asTheyAreNow(ctx, tx, req, viewer); err != nil {
			return err
		}
		v.Request, v.HeldTo = req, req.Classes // a draft's, judged below
		if req.HiddenFrom(viewer) {
			return nil
		}
		if v.Items, err = shownItems(ctx, tx, id, opts.Items); err != nil {
			return err
		}
		if v.Approvals, err = approvals(ctx, tx, id); err != nil {
			return err
		}
		v.Count = CountOf(s.cfg.Policy(), req, v.Approvals, s.cfg.Now())
		if v.Progress, err = progressNotStored(ctx, tx, id); err != nil {
			return err
		}
		if v.Edits, err = edits(ctx, tx, id, opts.Edits, EditDiffBytes); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, countEdits, id).Scan(&v.Edited); err != nil {
			return err
		}
		if v.Shown, err = shownPayloads(ctx, tx, id, opts.Shown, opts.ShownBytes); err != nil {
			return err
		}
		if v.Failures, err = failures(ctx, tx, id, opts.Items); err != nil {
			return err
		}
		if !req.Status.Editable() { // nothing of a request not yet approved was sent
			if v.CameBack, err = cameBack(ctx, tx, id, opts.Items); err != nil {
				return err
			}
		}
		v.Reviewer = req.MayApprove(viewer, viewerNow).Outcome == replaypolicy.Go // as Approve judges it
		v.Canceller = req.Status.Open() && replaypolicy.MayCancel(req.Requester, viewer).Outcome == replaypolicy.Go
		if !req.Status.Editable() {
			return nil
		}
		fs, err := s.requestFacts(ctx, tx, req)
		if err != nil {
			return err
		}
		table := s.cfg.Policy()
		v.Decision = replaypolicy.DecideItems(table, items(fs), viewer, policyRequest(req, v.Approvals), s.cfg.Now())
		v.HeldTo = heldTo(table, req, fs)
		shown := map[int64]bool{}
		for _, it := range v.Items {
			shown[it.DeadLetterID] = true
		}
		v.Now = map[int64]replaypolicy.Verdict{}
		for _, f := range fs {
			if shown[f.deadLetterID] {
				v.Now[f.deadLetterID] = replaypolicy.JudgeItem(table, f.item, replaypolicy.AtRequest)
			}
		}
		if req.ItemCount > opts.Payloads || replaypolicy.MayEditPayload(req.Class, req.Requester, viewer).Outcome != replaypolicy.Go {
			return nil
		}
		if v.Edited > 0 {
			if v.Undo, err = s.editUndoPreviews(ctx, tx, req, viewer); err != nil {
				return err
			}
		}
		v.Payloads, err = livePayloads(ctx, tx, req, opts.Payloads)
		return err
	})
	if err != nil {
		return View{}, fmt.Errorf("view replay %d: %w", id, err)
	}
	return v, nil
}

// Live is what a request page's progress poll redraws of a request past
// its approval, read in one snapshot: its progress, its first items as
// View reads them, and which of those came back as new dead letters
// (CameBacks, as View reads them).
type Live struct {
	Progress Progress
	Items    []Item
	CameBack CameBacks
}

// Live reads request id's progress, its first limit items and their
// returns (a probe of dead_letters_replay_of_idx for each of its first
// CameBackItemsMax items that was sent, as View does), in one snapshot,
// for the poll of its page while it runs. The caller has read the request
// and may show it to the viewer.
func (s *Service) Live(ctx context.Context, id int64, limit int) (Live, error) {
	var l Live
	err := s.read(ctx, func(tx pgx.Tx) error {
		var err error
		if l.Progress, err = progressNotStored(ctx, tx, id); err != nil {
			return err
		}
		if l.Items, err = shownItems(ctx, tx, id, limit); err != nil {
			return err
		}
		l.CameBack, err = cameBack(ctx, tx, id, limit)
		return err
	})
	if err != nil {
		return Live{}, fmt.Errorf("read replay %d as it runs: %w", id, err)
	}
	return l, nil
}

// editUndoPreviews are what undoing each edit of req would do, by dead
// letter (undoPreviews of undoFacts), as viewer, its requester, would.
func (s *Service) editUndoPreviews(ctx context.Context, q querier, req Request, viewer quarantine.Actor) (map[int64]UndoPreview, error) {
	fs, err := s.undoFacts(ctx, q, req)
	if err != nil {
		return nil, err
	}
	return s.undoPreviews(ctx, q, req, fs, viewer)
}

// shownItems reads the first limit items of request id as its pages show
// them (shownItemColumns).
func shownItems(ctx context.Context, q querier, id int64, limit int) ([]Item, error) {
	rows, err := q.Query(ctx, selectShownItems, id, limit, dlq.ListTextChars)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanShownItem)
}

// livePayloads are the payloads the first limit live items of request req
// send, by dead letter (and, of a draft, those an edit may let go; and the
// edits items left out hold, UndoOnly), each read only when it is small
// enough to edit (LivePayload).
func livePayloads(ctx context.Context, q querier, req Request, limit int) (map[int64]LivePayload, error) {
	rows, err := q.Query(ctx, selectLivePayloads, req.ID, limit, req.Status == StatusDraft, MaxEditablePayload)
	if err != nil {
		return nil, err
	}
	out := map[int64]LivePayload{}
	var dl int64
	var p LivePayload
	_, err = pgx.ForEachRow(rows, []any{&dl, &p.Data, &p.Size, &p.UndoOnly}, func() error {
		out[dl] = p
		return nil
	})
	return out, err
}

// shownPayloads reads the start (up to size bytes) of the payloads of the
// first limit live items of request id.
func shownPayloads(ctx context.Context, q querier, id int64, limit, size int) (map[int64]ShownPayload, error) {
	out := map[int64]ShownPayload{}
	if limit <= 0 {
		return out, nil
	}
	rows, err := q.Query(ctx, selectShownPayloads, id, limit, size)
	if err != nil {
		return nil, err
	}
	var dl int64
	var p ShownPayload
	_, err = pgx.ForEachRow(rows, []any{&dl, &p.Data, &p.Size, &p.Removed}, func() error {
		out[dl] = p
		return nil
	})
	return out, err
}

// failureText is how much of a dead letter's error the items tables
// read: what a cell shows (its first line, up to 80 characters) and one
// more, so that the cell knows to end with "…". A page lists up to 20,000
// items: the dead letter's page shows the rest.
const failureText = 81

// Failure is why a dead letter failed, as its producer said: its error
// class, and its error up to failureText characters (Cut: it is longer;
// the dead letter's page shows all of it).
type Failure struct {
	ErrorClass string
	Error      string
	Cut        bool
	// Removed: retention removed the dead letter; nothing of it is left.
	Removed bool
}

// failures reads why the dead letters of the first limit items of request
// id failed, by dead letter.
func failures(ctx context.Context, q querier, id int64, limit int) (map[int64]Failure, error) {
	out := map[int64]Failure{}
	if limit <= 0 {
		return out, nil
	}
	rows, err := q.Query(ctx, selectFailures, id, limit, failureText)
	if err != nil {
		return nil, err
	}
	var dl int64
	var f Failure
	_, err = pgx.ForEachRow(rows, []any{&dl, &f.ErrorClass, &f.Error, &f.Cut, &f.Removed}, func() error {
		out[dl] = f
		return nil
	})
	return out, err
}

// Edits returns the first limit edited items of request id with the
// starts of both payloads, up to one byte more than compared (the
// approvals list compares less than a request's page).
func (s *Service) Edits(ctx context.Context, id int64, limit, compared int) ([]Edit, error) {
	out, err := edits(ctx, s.pool, id, limit, compared)
	if err != nil {
		return nil, fmt.Errorf("read edits of replay %d: %w", id, err)
	}
	return out, nil
}

func edits(ctx context.Context, q querier, id int64, limit, compared int) ([]Edit, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := q.Query(ctx, selectEdits, id, limit, compared+1, dlq.ListTextChars)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Edit, error) {
		var e Edit
		err := row.Scan(&e.DeadLetterID, &e.MsgID, &e.Reason, &e.Original, &e.Edited, &e.OriginalSize, &e.EditedSize,
			&e.OriginalSHA256, &e.EditedSHA256)
		return e, err
	})
}

// Selection is a frozen selection as its requester reviews it: its
// requests, each with its first items and the phrase to type, if any.
type Selection struct {
	Requests []SelectionRequest
}

// SelectionRequest is one request of a selection.
type SelectionRequest struct {
	Request
	Items []Item
	Edits []Edit
	// Union is every class it is held to besides its class (heldTo: what
	// its submit stored, or for a draft what its items are classed by as
	// things stand), whose knobs its limits are with its class's
	// (replaypolicy.Table.RequestKnobs); Confirmation the phrase the rules
	// ask to type ("" none), of the same classes (confirmationOf).
	Union        []replaypolicy.Class
	Confirmation string
	// Payloads are the payloads the requester may still edit, by dead
	// letter (small requests of classes whose payloads may be edited), and
	// Undo what undoing each edit would do.
	Payloads map[int64]LivePayload
	Undo     map[int64]UndoPreview
	// Waits says how many of its items would wait for their target
	// stream's duplicate window if it ran now, and until when.
	Waits Waits
	// NeedsNote: an item's error class needs a reconciliation note.
	NeedsNote bool
	// OnSubmit is what submitting it would come to as things stand;
	// Counts its items as every page counts them (CountItems).
	OnSubmit OnSubmit
	Counts   ItemCounts
	// Failures are why the dead letters of Items failed (ItemFailures).
	Failures map[int64]Failure
}

// OnSubmit is what submitting a draft comes to by the rules
// (JudgeRequest over its items as they stand, the reason, rate and note
// the form asks for aside): Approvals is how many approvers, none of them
// the requester, it then waits for (0: it is approved at once and starts
// publishing); Void, that none of its items is left to replay; Refused,
// why the rules refuse it ("" when they do not); SelfFixed, the item type
// whose fix marker the requester recorded, which is why it needs an
// approver (replaypolicy.Terms.SelfFixed; "" when none is).
type OnSubmit struct {
	Approvals int
	Void      bool
	Refused   string
	SelfFixed string
}

// onSubmit judges draft r, whose items are fs, as Submit will (submitOne),
// with the form's fields filled: only what the rules ask of the request
// is read, never these stand-ins.
func onSubmit(t *replaypolicy.Table, r Request, fs []itemFact) OnSubmit {
	its := items(fs)
	verdicts := make([]replaypolicy.Verdict, len(its))
	for i, it := range its {
		verdicts[i] = replaypolicy.JudgeItem(t, it, replaypolicy.AtRequest)
	}
	req := policyRequest(r, nil)
	req.Reason, req.ReconciliationNote, req.Rate = "the reason to come", "the note to come", 0
	if req.IntentHash == "" {
		req.IntentHash = "the intent to come"
	}
	terms, v := replaypolicy.JudgeRequest(t, verdicts, req)
	switch v.Outcome {
	case replaypolicy.Go:
		return OnSubmit{Approvals: terms.Knobs.Approvals, SelfFixed: terms.SelfFixed}
	case replaypolicy.Done:
		return OnSubmit{Void: true}
	}
	return OnSubmit{Refused: v.Reason}
}

// Waits is how many items of a request wait for a duplicate window.
type Waits struct {
	Items   int       // items published no earlier than their original's window has passed
	Until   time.Time // when the last of them may go
	Streams []string  // the streams whose windows they wait for: the targets, or streams that copy them with a longer window (Window.Holds)
	Behind  int       // of Items, those that wait for a copy made since the original to copy it (Copy.Behind): when they go is not known yet
	Unread  int       // items whose target stream's window could not be read: they wait until it can be
	First   string    // the rule's sentence for the first item that waits
}

// storedBy is the latest time the original of a dead letter can have been
// stored: the earlier of its first failure (when plausible) and the moment
// the dead letter was stored. The original was stored before either.
func storedBy(deadLetteredAt time.Time, firstFailedAt *time.Time) time.Time {
	if f := firstFailedAt; f != nil && f.After(dlq.MinPlausibleTime) && f.Before(deadLetteredAt) {
		return *f
	}
	return deadLetteredAt
}

// The live items of a request with their targets and when their
// originals were stored at the latest, for Waits.
const selectStoredBy = `SELECT i.subject, i.msg_id, d.dead_lettered_at, d.first_failed_at, d.received_at, d.flags FROM replay_items i
    JOIN dead_letters d ON d.id = i.dead_letter_id AND d.dead_lettered_at = i.dead_lettered_at
    WHERE i.request_id = $1 AND i.skip_reason = ''`

// pendingWindow is one live item as waits judges it.
type pendingWindow struct {
	subject, msgID           string
	storedBy, deadLetteredAt time.Time
}

func storedByOf(ctx context.Context, q querier, id int64) ([]pendingWindow, error) {
	rows, err := q.Query(ctx, selectStoredBy, id)
	if err != nil {
		return nil, err
	}
	var out []pendingWindow
	var p pendingWindow
	var first *time.Time
	var received time.Time
	var flags []string
	_, err = pgx.ForEachRow(rows, []any{&p.subject, &p.msgID, &p.deadLetteredAt, &first, &received, &flags}, func() error {
		p.deadLetteredAt = dlq.DeadLetteredBy(p.deadLetteredAt, received, flags) // as the worker judges it (job.attempt)
		p.storedBy = storedBy(p.deadLetteredAt, first)
		out = append(out, p)
		return nil
	})
	return out, err
}

// waits judges, as a worker would now (JudgeWindow, a first attempt), how
// many of items wait for a duplicate window.
func (s *Service) waits(ctx context.Context, items []pendingWindow) Waits {
	var w Waits
	if s.cfg.Windows == nil {
		return w
	}
	now := s.cfg.Now()
	streams := map[string]bool{}
	var down replaypolicy.Window // an unreadable answer, kept for the rest: a NATS that is down costs one wait, not one per item
	for _, it := range items {
		win := down
		if win.Unreadable == "" {
			if win = s.cfg.Windows.Window(ctx, it.subject); win.Unreadable != "" {
				down = win
			}
		}
		a := replaypolicy.Attempt{MsgID: it.msgID, StoredBy: it.storedBy, DeadLetteredAt: it.deadLetteredAt, Window: win, Margin: s.cfg.WindowMargin}
		v := replaypolicy.JudgeWindow(a, now)
		if v.Needs == replaypolicy.NeedCopies {
			// Past the window as the copies' creation says: read, as the
			// worker does, when a copy made since copied the subject.
			a.Window = s.cfg.Windows.LateCopies(ctx, a)
			v = replaypolicy.JudgeWindow(a, now)
		}
		switch v.Outcome {
		case replaypolicy.Defer:
			w.Items++
			by := a.Holds().By // a stream that copies the target, when its window holds the id the longer
			if c, ok := a.Behind(); ok {
				by = c.Stream // when it may go is not known yet
				w.Behind++
			} else if v.Until.After(w.Until) {
				w.Until = v.Until
			}
			if !streams[by] {
				streams[by] = true
				w.Streams = append(w.Streams, by)
			}
		case replaypolicy.Wait:
			w.Unread++
		default:
			continue
		}
		if w.First == "" {
			w.First = v.Reason
		}
	}
	return w
}

// maxSelectionEdits bounds the edited items a confirm page shows the diff of.
const maxSelectionEdits = 20

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

// SelectionDeniedError is Selection's answer to anyone but the requester
// of a selection that exists. Its code is not_found (quarantine.ErrorCode),
// the answer for one that does not exist; the caller writes the denied
// audit rows (DeniedEvents), as the web layer does for every object outside
// the caller's scope: it alone knows whether another site started the
// request, which marks the rows and limits such refusals per person.
type SelectionDeniedError struct {
	Batch   string
	Tenants []string // of the selection's requests, each once, in their order
}

func (e *SelectionDeniedError) Error() string {
	return fmt.Sprintf("replay batch %q is someone else's: %v", e.Batch, errNoBatch)
}

// Unwrap gives the error its not_found code.
func (e *SelectionDeniedError) Unwrap() error { return errNoBatch }

// DeniedEvents completes e (actor, request metadata) as the denied audit
// rows of the attempt: replay.selection on the batch, one row in each
// tenant of its requests (a refusal that touches several tenants is one
// row in each, for each tenant's auditors to see), naming nothing else.
func (e *SelectionDeniedError) DeniedEvents(ev audit.Event) []audit.Event {
	ev.Action, ev.Outcome = audit.ActionReplaySelection, audit.OutcomeDenied
	ev.ObjectType, ev.ObjectID, ev.Reason = "replay_batch", e.Batch, quarantine.ErrorMessage(errNoBatch)
	out := make([]audit.Event, 0, len(e.Tenants))
	for _, tenant := range e.Tenants {
		ev.Tenant = tenant
		out = append(out, ev)
	}
	return out
}

// requestTenants are the tenants of reqs, each once, in the order of reqs
// (a selection's requests are one per tenant).
func requestTenants(reqs []Request) []string {
	var out []string
	for _, r := range reqs {
		if !slices.Contains(out, r.Tenant) {
			out = append(out, r.Tenant)
		}
	}
	return out
}

// Submitted reads the requests of batch as the page a selection submitted
// as several requests lands on shows them, in one snapshot: each with its
// items counted as every page counts them (CountItems) and how many of
// its replayed items came back as new dead letters (Listed.CameBack, as
// the replays list counts them: cameBackCounts, of requests of up to
// listCameBackMax replayed items). It reads no item, so that page can
// poll it. It is not_found for anyone but the requester: a
// *SelectionDeniedError, whose denied audit row the caller writes (as
// Selection).
func (s *Service) Submitted(ctx context.Context, batch string, viewer quarantine.Actor) ([]Listed, error) {
	var out []Listed
	var denied []string
	err := s.read(ctx, func(tx pgx.Tx) error {
		reqs, err := batchRequests(ctx, tx, selectBatch, batch)
		if err != nil {
			return err
		}
		ids := make([]int64, len(reqs))
		for i, r := range reqs {
			if replaypolicy.MaySubmit(r.Requester, viewer).Outcome != replaypolicy.Go {
				denied = requestTenants(reqs)
				return fmt.Errorf("replay batch %q: %w", batch, errNoBatch)
			}
			ids[i] = r.ID
		}
		progress, err := outcomes(ctx, tx, ids)
		if err != nil {
			return err
		}
		out = make([]Listed, len(reqs))
		for i, r := range reqs {
			p := progress[r.ID].Progress
			out[i] = Listed{Request: r, Progress: p, Items: CountItems(r, p)}
		}
		return submittedCameBack(ctx, tx, out)
	})
	if denied != nil {
		err = &SelectionDeniedError{Batch: batch, Tenants: denied}
	}
	if err != nil {
		return nil, fmt.Errorf("read submitted selection: %w", err)
	}
	return out, nil
}

// submittedCameBack counts the returns of reqs, the requests of a
// submitted selection, as the replays list counts them (cameBackCounts),
// of at most listCameBackMax replayed items in all, the smallest requests
// first: the page polls every 2 s while one of them runs, and a selection
// split by tenant and class into many requests of up to 1,000 replayed
// items each made as many probes per poll (review round 44). A request
// left out says nothing of returns, as the list says nothing of a big one.
func submittedCameBack(ctx context.Context, q querier, reqs []Listed) error {
	order := make([]int, len(reqs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return reqs[a].Progress.Replayed - reqs[b].Progress.Replayed })
	var counted []Listed
	var at []int
	budget := listCameBackMax
	for _, i := range order {
		if n := reqs[i].Progress.Replayed; n > 0 && n <= budget {
			counted, at = append(counted, reqs[i]), append(at, i)
			budget -= n
		}
	}
	if err := cameBackCounts(ctx, q, counted); err != nil {
		return err
	}
	for k, i := range at {
		reqs[i].CameBack = counted[k].CameBack
	}
	return nil
}

// Selection reads batch as viewer reviews it, with the first items of
// each request and its first edits, in one transaction. It is not_found
// for anyone but the requester: a *SelectionDeniedError, whose denied
// audit row the caller writes.
func (s *Service) Selection(ctx context.Context, batch string, viewer quarantine.Actor, items int) (Selection, error) {
	var sel Selection
	var denied []string // the tenants of a selection that is not the viewer's
	targets := map[int64][]pendingWindow{}
	err := s.read(ctx, func(tx pgx.Tx) error {
		reqs, err := batchRequests(ctx, tx, selectBatch, batch)
		if err != nil {
			return err
		}
		ids := make([]int64, len(reqs))
		for i, r := range reqs {
			ids[i] = r.ID
		}
		progress, err := outcomes(ctx, tx, ids)
		if err != nil {
			return err
		}
		for _, r := range reqs {
			if replaypolicy.MaySubmit(r.Requester, viewer).Outcome != replaypolicy.Go {
				denied = requestTenants(reqs)
				return fmt.Errorf("replay batch %q: %w", batch, errNoBatch) // someone else's selection does not exist for you
			}
			sr := SelectionRequest{Request: r}
			if sr.Items, err = shownItems(ctx, tx, r.ID, items); err != nil {
				return err
			}
			if sr.Edits, err = edits(ctx, tx, r.ID, maxSelectionEdits, EditDiffBytes); err != nil {
				return err
			}
			if r.ItemCount <= maxSelectionEdits && replaypolicy.MayEditPayload(r.Class, r.Requester, viewer).Outcome == replaypolicy.Go {
				if sr.Payloads, err = livePayloads(ctx, tx, r, maxSelectionEdits); err != nil {
					return err
				}
			}
			if targets[r.ID], err = storedByOf(ctx, tx, r.ID); err != nil {
				return err
			}
			fs, err := s.requestFacts(ctx, tx, r) // once: every live item, with what the rules judge of its headers
			if err != nil {
				return err
			}
			table := s.cfg.Policy()
			sr.Union = heldTo(table, r, fs)
			sr.Confirmation = confirmationOf(table, r, fs, sr.Union)
			sr.NeedsNote = s.needsNote(fs)
			if r.Status == StatusDraft {
				sr.OnSubmit = onSubmit(table, r, fs)
			}
			if sr.Payloads != nil && len(sr.Edits) > 0 {
				if sr.Undo, err = s.editUndoPreviews(ctx, tx, r, viewer); err != nil {
					return err
				}
			}
			if sr.Failures, err = failures(ctx, tx, r.ID, items); err != nil {
				return err
			}
			sr.Counts = CountItems(r, progress[r.ID].Progress)
			sel.Requests = append(sel.Requests, sr)
		}
		return nil
	})
	if denied != nil {
		err = &SelectionDeniedError{Batch: batch, Tenants: denied}
	}
	if err != nil {
		return Selection{}, fmt.Errorf("read selection: %w", err)
	}
	for i := range sel.Requests {
		sel.Requests[i].Waits = s.waits(ctx, targets[sel.Requests[i].ID]) // NATS, after the transaction
	}
	return sel, nil
}
