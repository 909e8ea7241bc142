package web

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/views"
)

// sessionLeftOut keeps in the person's session what their last
// leftOutKeep "Replay all matching" batches left out of their filters, by
// batch id; sessionCloseLeftOut what their last leftOutKeep "Discard (or
// resolve) all matching" confirmations did, by the token its form carries
// (closeLeftOutKey), let go once the close is done: two lists, so that
// confirmations of closes never push a batch out. A batch's confirm page names what it left out
// however often it is shown (a payload edit comes back to it), in
// whichever tab, while the person starts other batches in others; a
// close's confirmation names it again when a submit is refused (no
// reason) and its flash says it once done. A link to another batch, or a
// token the session does not keep, names nothing. It is kept in the
// session rather than with the batch: a draft holds what it selected,
// not what its filter could not reach, and the session is the person's
// own. It is not read from the address or the form: a link could not
// make a page claim what no filter selected.
const (
	sessionLeftOut      = "left_out"
	sessionCloseLeftOut = "close_left_out"
)

// leftOutKeep is how many actions sessionLeftOut keeps, the newest: a
// bound on the session's size, past what a person works on in tabs at
// once. An older one's page then names nothing left out.
const leftOutKeep = 8

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

// leftOutKept is one action of what the session keeps under
// sessionLeftOut (a list of them, oldest first).
type leftOutKept struct {
	Key     string
	LeftOut views.LeftOut
}

// keepLeftOut keeps left in the session's list (sessionLeftOut or
// sessionCloseLeftOut) as what the action key left out of its filter,
// beside what the person's leftOutKeep-1 actions before it of the list
// left out (the oldest let go). Without it the pages name nothing left
// out: a failure is logged, not shown.
func (s *Server) keepLeftOut(ctx context.Context, list, key string, left *views.LeftOut) {
	kept := slices.DeleteFunc(s.leftOutKept(ctx, list), func(k leftOutKept) bool { return k.Key == key })
	if left != nil {
		kept = append(kept, leftOutKept{Key: key, LeftOut: *left})
	}
	if len(kept) > leftOutKeep {
		kept = kept[len(kept)-leftOutKeep:]
	}
	b, err := json.Marshal(kept)
	if err != nil {
		s.deps.Log.Warn("keep what an action by filter left out", "key", key, "err", err)
		return
	}
	s.deps.Sessions.Put(ctx, list, string(b))
}

// forgetLeftOut lets go of what the session's list keeps for key.
func (s *Server) forgetLeftOut(ctx context.Context, list, key string) {
	s.keepLeftOut(ctx, list, key, nil)
}

// leftOutOf is what the action key left out of its filter, as
// keepLeftOut kept it in list, of what the person may read now
// (readLeftOut); nil when the session keeps nothing for it, or nothing
// they may still read.
func (s *Server) leftOutOf(c echo.Context, list, key string) *views.LeftOut {
	ctx := c.Request().Context()
	for _, k := range s.leftOutKept(ctx, list) {
		if k.Key == key {
			return readLeftOut(k.LeftOut, s.tenantsWith(ctx, userOf(c), authz.ObjDeadLetter, authz.ActRead))
		}
	}
	return nil
}

// readLeftOut is what of left a person who reads the dead letters of read
// may see now. It was kept when they may have read more (a role since
// removed), and it names tenants, replay requests and message ids: a
// group of a tenant they no longer read goes whole, counted out of what
// was chosen too (their filter would not reach those dead letters now),
// as does a replay request's (its dead letters are of one tenant, its
// items'); of a group by status, which names no tenant, the dead letters
// it names of such a tenant go, and its count stays. An item is of its
// group's tenant when it names none (kept before items named theirs): of
// no tenant, it goes. Nil when no group is left.
func readLeftOut(left views.LeftOut, read authz.Scope) *views.LeftOut {
	out := left
	out.Groups = nil
	for _, g := range left.Groups {
		items := slices.DeleteFunc(slices.Clone(g.Items), func(it views.ConfirmItem) bool {
			return !read.Has(cmp.Or(it.Tenant, g.Tenant))
		})
		if (g.Tenant != "" && !read.Has(g.Tenant)) || (g.RequestID != 0 && len(items) < len(g.Items)) {
			out.N, out.Of = out.N-g.N, out.Of-g.N
			continue
		}
		g.Items = items
		out.Groups = append(out.Groups, g)
	}
	if len(out.Groups) == 0 {
		return nil
	}
	return &out
}

// leftOutKept is what the session keeps under list; nil when it keeps
// nothing or what it keeps does not read.
func (s *Server) leftOutKept(ctx context.Context, list string) []leftOutKept {
	raw := s.deps.Sessions.GetString(ctx, list)
	var kept []leftOutKept
	if raw == "" || json.Unmarshal([]byte(raw), &kept) != nil {
		return nil
	}
	// Closes kept here by a console before they had a list of their own
	// ("close:" keys) are let go as this one is read and written.
	return slices.DeleteFunc(kept, func(k leftOutKept) bool { return strings.HasPrefix(k.Key, "close:") })
}
