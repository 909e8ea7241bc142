package web

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/views"
)

// sessionReplayLeftOut keeps in the person's session what their last
// "Replay all matching" left out of its batch, by the batch's id, so that
// the batch's confirm page names it however often it is shown (a payload
// edit comes back to it) and a link to another batch names nothing. It
// is not read from the address: a link could not make the page claim
// what no filter selected.
const sessionReplayLeftOut = "replay_left_out"

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

// replayLeftOutKept is what the session keeps under sessionReplayLeftOut.
type replayLeftOutKept struct {
	Batch   string
	LeftOut views.LeftOut
}

// keepReplayLeftOut keeps left as what batch left out of its filter, in
// place of what an earlier batch left out. Without it the confirm page
// names nothing left out: a failure is logged, not shown.
func (s *Server) keepReplayLeftOut(ctx context.Context, batch string, left views.LeftOut) {
	b, err := json.Marshal(replayLeftOutKept{Batch: batch, LeftOut: left})
	if err != nil {
		s.deps.Log.Warn("keep what a replay left out", "batch", batch, "err", err)
		return
	}
	s.deps.Sessions.Put(ctx, sessionReplayLeftOut, string(b))
}

// replayLeftOutOf is what batch left out of its filter, as
// keepReplayLeftOut kept it; nil when the session keeps nothing for it.
func (s *Server) replayLeftOutOf(ctx context.Context, batch string) *views.LeftOut {
	raw := s.deps.Sessions.GetString(ctx, sessionReplayLeftOut)
	if raw == "" {
		return nil
	}
	var kept replayLeftOutKept
	if err := json.Unmarshal([]byte(raw), &kept); err != nil || kept.Batch != batch {
		return nil
	}
	return &kept.LeftOut
}
