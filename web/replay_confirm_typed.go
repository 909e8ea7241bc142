package web

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
)

// sessionConfirmTyped keeps, in the person's session, what they had typed
// in a confirm page's request form (the replay's reason, the note, each
// request's rate and typed confirmation) when a payload edit on that page
// took them away from it: the page the edit comes back to shows it again.
// It is kept in the session, not in the address the edit goes back to, so
// that a reason (why a replay is asked, which may name a customer or an
// incident) and the rates never reach the browser's history, a proxy's
// log or the access log.
const sessionConfirmTyped = "confirm_typed"

// typedKeep is how many confirm pages' forms sessionConfirmTyped keeps,
// the newest: a bound on the session's size, past what a person works on
// in tabs at once (as leftOutKeep).
const typedKeep = 8

// typedKept is one confirm page's request form as kept, by its batch.
type typedKept struct {
	Batch         string
	Reason        string
	Note          string
	Rates         map[int64]string
	Confirmations map[int64]string
}

// keepTyped keeps f, the request form of batch's confirm page as typed, in
// the session (sessionConfirmTyped), each text bounded as one carried from
// the list is (carriedReason: a longer one is not kept, and the caller
// says so). Without it the page shows the form empty: a failure is
// logged, not shown.
func (s *Server) keepTyped(ctx context.Context, batch string, f submitForm) {
	k := typedKept{Batch: batch, Reason: carriedReason(f.Reason), Note: carriedReason(f.Note),
		Rates: map[int64]string{}, Confirmations: map[int64]string{}}
	for id, v := range f.Rates {
		k.Rates[id] = carriedReason(v)
	}
	for id, v := range f.Confirmations {
		k.Confirmations[id] = carriedReason(v)
	}
	kept := append(typedWithout(s.typedList(ctx), batch), k)
	if len(kept) > typedKeep {
		kept = kept[len(kept)-typedKeep:]
	}
	s.putTyped(ctx, kept)
}

// typedOf is the request form of batch's confirm page the session keeps
// (keepTyped); false when it keeps none.
func (s *Server) typedOf(ctx context.Context, batch string) (submitForm, bool) {
	for _, k := range s.typedList(ctx) {
		if k.Batch == batch {
			return submitForm{Reason: k.Reason, Note: k.Note, Rates: maps.Clone(k.Rates), Confirmations: maps.Clone(k.Confirmations)}, true
		}
	}
	return submitForm{}, false
}

// forgetTyped lets go of what the session keeps of batch's form (it was
// submitted).
func (s *Server) forgetTyped(ctx context.Context, batch string) {
	all := s.typedList(ctx)
	if kept := typedWithout(all, batch); len(kept) < len(all) {
		s.putTyped(ctx, kept)
	}
}

// typedList is what the session keeps (sessionConfirmTyped), oldest
// first; nil when it keeps nothing or what it keeps does not read.
func (s *Server) typedList(ctx context.Context) []typedKept {
	raw := s.deps.Sessions.GetString(ctx, sessionConfirmTyped)
	var kept []typedKept
	if raw == "" || json.Unmarshal([]byte(raw), &kept) != nil {
		return nil
	}
	return kept
}

// typedWithout is kept without batch's form.
func typedWithout(kept []typedKept, batch string) []typedKept {
	return slices.DeleteFunc(slices.Clone(kept), func(k typedKept) bool { return k.Batch == batch })
}

func (s *Server) putTyped(ctx context.Context, kept []typedKept) {
	if len(kept) == 0 {
		s.deps.Sessions.Remove(ctx, sessionConfirmTyped)
		return
	}
	b, err := json.Marshal(kept)
	if err != nil {
		s.deps.Log.Warn("keep a confirm page's form across a payload edit", "err", err)
		return
	}
	s.deps.Sessions.Put(ctx, sessionConfirmTyped, string(b))
}
