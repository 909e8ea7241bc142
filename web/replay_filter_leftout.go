package web

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

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

// leftOutSentence says in a sentence which tenants left hold what a
// replay left out: "It also selects 2 dead letters in globex, where you
// may not request replays."; "" when it left out none for its tenant
// (only some in a status a replay cannot take, which the message that
// ends with it says). A tenant is written as Shown: a flash is text.
func leftOutSentence(left *views.LeftOut) string {
	var parts []string
	for _, g := range left.Groups {
		if g.Tenant != "" {
			parts = append(parts, countNoun(g.N, "dead letter", "dead letters")+" in "+views.Shown(g.Tenant))
		}
	}
	if len(parts) == 0 {
		return ""
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
