package web

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/views"
)

// sessionReplayLeftOut keeps in the person's session what their last
// replayLeftOutKeep "Replay all matching" batches left out of their
// filters, by batch id, so that a batch's confirm page names it however
// often it is shown (a payload edit comes back to it), in whichever tab,
// while the person starts other batches in others; a link to another
// batch names nothing. It is kept in the session rather than with the
// batch: a draft holds what it selected, not what its filter could not
// reach, and the session is the person's own. It is not read from the
// address: a link could not make the page claim what no filter selected.
const sessionReplayLeftOut = "replay_left_out"

// replayLeftOutKeep is how many batches sessionReplayLeftOut keeps, the
// newest: a bound on the session's size, past what a person works on in
// tabs at once. An older batch's page then names nothing left out.
const replayLeftOutKeep = 8

// replayLeftOut is what filter f, over tenants where the person may read
// but not request replays, selects now, by tenant (a checkbox selection's
// confirmation names those it may not close the same way:
// splitClosable); drafted is how many the batch took. Ids only are read,
// at most replay.MaxSelection (AtLeast past that), then their tenant and
// message id. Nil when it selects none.
func (s *Server) replayLeftOut(ctx context.Context, f dlq.ListFilter, drafted int) (*views.LeftOut, error) {
	ids, err := s.deps.DeadLetters.MatchingIDs(ctx, f, replay.MaxSelection+1)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	more := len(ids) > replay.MaxSelection
	if more {
		ids = ids[:replay.MaxSelection]
	}
	states, err := s.deps.DeadLetters.CloseStates(ctx, ids, f.Tenants, false)
	if err != nil {
		return nil, err
	}
	left := &views.LeftOut{Chosen: "matching", AtLeast: more, Verb: "request replays"}
	at := map[string]int{}
	for _, id := range ids {
		st, ok := states[id]
		if !ok {
			continue // removed since: not selected any more
		}
		i, seen := at[st.Tenant]
		if !seen {
			i = len(left.Groups)
			at[st.Tenant] = i
			left.Groups = append(left.Groups, views.LeftOutGroup{Tenant: st.Tenant})
		}
		g := &left.Groups[i]
		g.N++
		if len(g.Items) < leftOutNamed {
			g.Items = append(g.Items, views.ConfirmItem{URL: deadLetterURL(id), MsgID: st.MsgID})
		}
		left.N++
	}
	if left.N == 0 {
		return nil, nil
	}
	left.Of = left.N + drafted
	return left, nil
}

// leftOutSentence says in a sentence which tenants left hold what a
// replay left out: "It also selects 2 dead letters in globex, where you
// may not request replays."
func leftOutSentence(left *views.LeftOut) string {
	var parts []string
	for _, g := range left.Groups {
		parts = append(parts, countNoun(g.N, "dead letter", "dead letters")+" in "+g.Tenant)
	}
	return "It also selects " + strings.Join(parts, ", ") + ", where you may not " + left.Verb + "."
}

// replayLeftOutKept is one batch of what the session keeps under
// sessionReplayLeftOut (a list of them, oldest first).
type replayLeftOutKept struct {
	Batch   string
	LeftOut views.LeftOut
}

// keepReplayLeftOut keeps left as what batch left out of its filter,
// beside what the person's replayLeftOutKeep-1 batches before it left out
// (the oldest let go). Without it the confirm page names nothing left
// out: a failure is logged, not shown.
func (s *Server) keepReplayLeftOut(ctx context.Context, batch string, left views.LeftOut) {
	kept := slices.DeleteFunc(s.replayLeftOutKept(ctx), func(k replayLeftOutKept) bool { return k.Batch == batch })
	kept = append(kept, replayLeftOutKept{Batch: batch, LeftOut: left})
	if len(kept) > replayLeftOutKeep {
		kept = kept[len(kept)-replayLeftOutKeep:]
	}
	b, err := json.Marshal(kept)
	if err != nil {
		s.deps.Log.Warn("keep what a replay left out", "batch", batch, "err", err)
		return
	}
	s.deps.Sessions.Put(ctx, sessionReplayLeftOut, string(b))
}

// replayLeftOutOf is what batch left out of its filter, as
// keepReplayLeftOut kept it; nil when the session keeps nothing for it.
func (s *Server) replayLeftOutOf(ctx context.Context, batch string) *views.LeftOut {
	for _, k := range s.replayLeftOutKept(ctx) {
		if k.Batch == batch {
			return &k.LeftOut
		}
	}
	return nil
}

// replayLeftOutKept is what the session keeps under sessionReplayLeftOut;
// nil when it keeps nothing or what it keeps does not read (one batch
// alone, as kept before the list: then that is let go).
func (s *Server) replayLeftOutKept(ctx context.Context) []replayLeftOutKept {
	raw := s.deps.Sessions.GetString(ctx, sessionReplayLeftOut)
	var kept []replayLeftOutKept
	if raw == "" || json.Unmarshal([]byte(raw), &kept) != nil {
		return nil
	}
	return kept
}
