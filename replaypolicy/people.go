package replaypolicy

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"golang.org/x/net/idna"
	"golang.org/x/text/unicode/norm"

	"github.com/quarantine-console/quarantine"
)

// Separation of duties: who may act on a request besides what their roles
// allow. The route's permission (authz) is checked before these; these say
// what no role can give.

// SamePerson reports whether a and b may be one person, for separation of
// duties (invariant 14, "one person is one person"): the same identity
// (issuer and subject), or the same mailbox (Mailbox: its spellings,
// case, width, quotes, IDNA form, a "+tag", and Gmail's dots aside),
// whether or not either provider verified it. Loose is the safe
// direction here, because a match only ever takes something away: an
// approver who may be the requester does not approve, two accounts of one
// approver count once. Whoever controls a second identity also controls
// whether its email is verified (or picks a provider that never verifies),
// so a rule that needed verified emails would let that account through by
// leaving its email unverified; someone who claims another person's
// address merely loses the right to approve that person's requests. A
// match grants nothing: what only the requester may do asks
// quarantine.Actor.SameIdentity. It cannot see one person behind two
// different mailboxes: that is the identity provider's to prevent.
func SamePerson(a, b quarantine.Actor) bool {
	if a.SameIdentity(b) {
		return true
	}
	ma, mb := Mailbox(a.Email), Mailbox(b.Email)
	return ma != "" && ma == mb
}

// MayBeOne is SamePerson for two people of a request, each as the request
// recorded them (a, b) and as the directory has their identity now (aNow,
// bNow; zero when not known): one person if any of those may be
// (invariant 14 over time). An email changes: a requester whose address
// became one their second account holds is that account's person from
// then on, though the request recorded the old address.
func MayBeOne(a, aNow, b, bNow quarantine.Actor) bool {
	return person{a, aNow}.mayBe(person{b, bNow})
}

// Mailbox is an email address as SamePerson compares it, one spelling
// for every way of writing one mailbox; "" for an empty address. It is
// the one normalization of separation of duties: the rules compare
// addresses with it, and dlq/replay and authz store it beside each address
// they keep (identity_addresses.mailbox), so that the database follows
// links between identities by the same key. It is meant to be loose (a
// match only takes something away) without making two mailboxes one:
//   - trimmed, and in Unicode compatibility form (NFKC): a full-width
//     "ａｎｎ＠ｅｘａｍｐｌｅ.com" is ann@example.com;
//   - the local part without needless quotes (RFC 5321: "ann"@example.com
//     is ann@example.com), its quoted pairs read ("a\ b" is "a b"); in
//     Unicode simple case folding, as strings.EqualFold compares (ANN,
//     Ann and ann are one; ß and ss stay two); and without a "+tag"
//     (ann+ops@example.com reaches ann@example.com at most providers);
//   - the domain without the root's trailing dot (example.com.), in its
//     ASCII form by IDNA's lookup mapping (exämple.com, EXÄMPLE.COM and
//     xn--exmple-cua.com are one domain; ß is not mapped to ss, as in
//     IDNA2008). A domain IDNA refuses (an address literal, an
//     underscore) is only case folded;
//   - at Gmail, as Gmail delivers (built in, not a setting):
//     googlemail.com is gmail.com, and the local part is without its dots
//     (after the "+tag" is cut), so ann.smith@gmail.com,
//     AnnSmith+x@googlemail.com and annsmith@gmail.com are one mailbox.
//     Elsewhere dots stay: ann.smith@example.com and annsmith@example.com
//     may be two people.
//
// A change to it changes the keys stored with addresses: `console
// migrate` writes each address's key again where it differs
// (migrations.fillMailboxes).
func Mailbox(email string) string {
	e := norm.NFKC.String(strings.TrimSpace(email))
	at := strings.LastIndexByte(e, '@')
	if at < 0 {
		return foldCase(e)
	}
	d := domainPart(e[at+1:])
	alias, dotless := dotlessDomains[d]
	if dotless {
		d = alias
	}
	return localPart(e[:at], dotless) + "@" + d
}

// dotlessDomains are the domains whose mail ignores dots in the local part,
// each with the domain it is one with: Gmail's (Google delivers
// ann.smith@gmail.com to annsmith@gmail.com, and googlemail.com is
// gmail.com). Two identities a Dex in front of GitHub and Google links to
// one inbox spelled two ways are one person. Only Gmail's own domains:
// Google Workspace domains, and other providers, keep the dots.
var dotlessDomains = map[string]string{"gmail.com": "gmail.com", "googlemail.com": "gmail.com"}

// localPart is the local part of an address as Mailbox compares it: its
// text with quotes and quoted pairs read, case folded, up to a "+" that
// starts a tag (not one that starts the local part), without its dots at a
// domain that ignores them (dotless); quoted again when it is no
// dot-string, so that "ann smith" stays one text and apart from annsmith.
func localPart(l string, dotless bool) string {
	if len(l) >= 2 && l[0] == '"' && l[len(l)-1] == '"' {
		var b strings.Builder
		in := l[1 : len(l)-1]
		for i := 0; i < len(in); i++ {
			if in[i] == '\\' && i+1 < len(in) {
				i++
			}
			b.WriteByte(in[i])
		}
		l = b.String()
	}
	l = foldCase(l)
	if plus := strings.IndexByte(l, '+'); plus > 0 {
		l = l[:plus]
	}
	if dotless {
		l = strings.ReplaceAll(l, ".", "")
	}
	if isDotString(l) {
		return l
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(l) + `"`
}

// isDotString reports whether l may stand unquoted as a local part (RFC
// 5321's Dot-string, with RFC 6531's non-ASCII letters): atoms of atext
// joined by single dots.
func isDotString(l string) bool {
	if l == "" {
		return false
	}
	for _, atom := range strings.Split(l, ".") {
		if atom == "" {
			return false
		}
		for _, r := range atom {
			if r < 0x80 && !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("!#$%&'*+-/=?^_`{|}~", r)) {
				return false
			}
		}
	}
	return true
}

// domainPart is the domain of an address as Mailbox compares it: without
// the root's trailing dot, in its ASCII form (IDNA lookup: case, width and
// U-labels mapped, A-labels checked); a domain IDNA refuses is only case
// folded.
func domainPart(d string) string {
	d = strings.TrimSuffix(d, ".")
	if a, err := idna.Lookup.ToASCII(d); err == nil && a != "" {
		return a
	}
	return foldCase(d)
}

// foldCase writes s in Unicode simple case folding: two strings that
// strings.EqualFold calls equal come out the same, and no others. Each
// letter becomes the least rune of its folding orbit (ann is ANN): a key
// to compare, not to show. (unicode.ToLower would be wrong here: it maps
// İ to i, which EqualFold keeps apart.)
func foldCase(s string) string {
	return strings.Map(func(r rune) rune {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		return least
	}, s)
}

// EmailKey is an email address as a match that gives something compares
// it (an email role binding against a verified email claim; the auditor's
// actor filter; the admin page naming role holders): its ASCII letters in
// lower case, nothing else changed; ok is false for an empty address and
// for one that is not all ASCII, which matches no binding and no filter.
//
// It is the strict counterpart of SamePerson's Mailbox. Loose is safe only
// where a match takes something away; where a match grants, two mailboxes
// must never become one key. Unicode case mapping would do that:
// strings.ToLower maps İ (U+0130) to i and the Kelvin sign K (U+212A) to
// k, so a verified ops@kİwİ.example (xn--kiwi-rwcc.example, a domain
// anyone may register) would hold the roles bound to ops@kiwi.example.
// Nor may it drop a "+tag", a quote or a trailing dot, as Mailbox does. So
// it maps only what every mail system reads as one mailbox (ASCII case,
// which the console has always ignored) and refuses the rest rather than
// guess: a person whose address is not ASCII is bound by identity
// (issuer|subject). Two addresses with one key are one mailbox to
// SamePerson too: a grant never reaches further than separation of duties
// looks (TestEmailKeyWithinMailbox).
func EmailKey(email string) (key string, ok bool) {
	if email == "" {
		return "", false
	}
	b := make([]byte, len(email))
	for i := 0; i < len(email); i++ {
		c := email[i]
		switch {
		case c >= 0x80:
			return "", false
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		b[i] = c
	}
	return string(b), true
}

// Object is the permission object of replays of class c ("replay:<class>"):
// what route gates and the worker's re-checks of people's rights name.
func Object(c Class) string { return "replay:" + string(c) }

// AnyClass is no class but all of them, in a permission object:
// Object(AnyClass) ("replay:*") is the family of every class's object. A
// policy line for it allows the action on replays of every class; a route
// of it lets through whoever holds the action on some class. It is never
// the class of a request (KnownClasses does not hold it).
const AnyClass Class = "*"

// Request statuses as the rules know them (the replay service's Status
// values).
const (
	statusDraft           = "draft"
	statusPendingApproval = "pending_approval"
	statusApproved        = "approved"
	statusRunning         = "running"
)

// RequestOpen reports whether a request of status may still change
// (approve, cancel, stop): a draft, one waiting for approval, approved or
// running.
func RequestOpen(status string) bool {
	return status == statusDraft || status == statusPendingApproval || status == statusApproved || status == statusRunning
}

// RequestEditable reports whether the payloads of a request of status may
// still be edited: only before anyone approved it.
func RequestEditable(status string) bool {
	return status == statusDraft || status == statusPendingApproval
}

// JudgeIntent says whether an approver who reviewed the intent reviewed
// (hex, as the page showed it) may approve or reject a request whose
// intent is now current: only the same one (any change is a new intent to
// review).
func JudgeIntent(reviewed, current string) Verdict {
	v := Verdict{Rule: -1, Outcome: Go}
	if !strings.EqualFold(strings.TrimSpace(reviewed), current) {
		return v.plain(Block, CheckIntentChanged, "the request changed since you reviewed it; review it again")
	}
	return v
}

// JudgeRead says whether an approver who read a request at version read
// (its version as their page showed it) may approve or reject it at
// version now: only the same one, even when its intent is the same again.
// An edit and its way back make the same intent (an edit's reason is not
// part of it), yet the approver read another reason than the request now
// gives, and the approvals given in between were taken out: what they
// approve or reject is what they read. A read of 0 says nothing (no
// version is 0: a request starts at 1), and only the intent judges
// (JudgeIntent); a negative one is a version read that none is (a form
// that sent none, or no number).
func JudgeRead(read, now int) Verdict {
	v := Verdict{Rule: -1, Outcome: Go}
	switch {
	case read < 0:
		return v.plain(Block, CheckIntentChanged, "the form did not say which version of the request you read: read it again")
	case read != 0 && read != now:
		return v.plain(Block, CheckIntentChanged, "the request changed since you read it: read it again")
	}
	return v
}

// MayApprove says whether actor (as signed in; actorNow: their identity
// as the directory has it now, zero when not known) may approve req: never
// someone who may be its requester (SamePerson), each as the request
// recorded them or as the directory has them now (Request.RequesterNow,
// actorNow), each also under every address the console has seen their
// identity with (Request.KnownAs). That is the rule the count judges each
// approval by (judgeApprovals: a person is every name we know them by), so
// an approval it lets through is one the count takes; judged with actorNow
// zero and without the actor's own addresses, an approval the directory
// makes the requester's would be recorded and count for nothing.
func MayApprove(req Request, actor, actorNow quarantine.Actor) Verdict {
	return notRequester(req, actor, actorNow, "you cannot approve your own request")
}

// KnowsAsRequester reports whether req knows actor, as signed in, for
// its requester without the other names the console has seen the actor's
// own identity with: the requester as recorded, as the directory has them
// now, or under an address they drafted, submitted or edited with that is
// the actor's. When only those other names make the actor the requester
// (their account has the requester's address now, or had it, or links to
// it), MayApprove still blocks them, and their session could not have
// told them why: the console says so (invalid) where the requester is
// simply forbidden.
func KnowsAsRequester(req Request, actor quarantine.Actor) bool {
	others := make([]quarantine.Actor, 0, len(req.KnownAs))
	for _, a := range req.KnownAs {
		if !a.SameIdentity(actor) {
			others = append(others, a)
		}
	}
	return personOf(others, req.Requester, req.RequesterNow).mayBe(person{actor})
}

// MayReconcile says whether actor (as signed in; actorNow: their identity
// as the directory has it now, zero when not known) may settle an item of
// req whose outcome nobody knows (applied, or not applied: republish or
// leave it). It is an approver's word on the target, and "republish"
// publishes the item once more: never someone who may be its requester
// (SamePerson), as for approving; a settle leaves no approval to judge
// again later, so the actor is compared as the directory has them now
// too. Whether a republish is open at all is JudgeRepublish's to say: not
// for a request that needed two approvers, whose two-person rule one
// settler's word would walk around.
func MayReconcile(req Request, actor, actorNow quarantine.Actor) Verdict {
	return notRequester(req, actor, actorNow, "you cannot settle an item of your own request: another approver of its class checks the target")
}

// notRequester blocks, with reason, an actor who may be req's requester
// (separation of duties: the loose rule, SamePerson), each as recorded or
// as the directory has them now (actorNow, req.RequesterNow), each also
// under every address the console has seen their identity with
// (Request.KnownAs: the requester's drafting, submitting and editing
// under an address their other identity holds now, too).
func notRequester(req Request, actor, actorNow quarantine.Actor, reason string) Verdict {
	v := Verdict{Class: req.Class, Rule: -1, Outcome: Go}
	switch {
	case SamePerson(actor, req.Requester):
		return v.plain(Block, CheckOwnRequest, reason)
	case MayBeOne(actor, quarantine.Actor{}, req.Requester, req.RequesterNow):
		return v.plain(Block, CheckOwnRequest, reason+": the requester's account now has your email address")
	case req.actor(actor, actorNow).mayBe(req.requester()):
		return v.plain(Block, CheckOwnRequest, reason+": your account, as the directory has it now or under an address it had before, has the requester's email address, now or as they had it before")
	}
	return v
}

// MayCancel says whether actor may cancel a request of requester: only the
// requester may.
func MayCancel(requester, actor quarantine.Actor) Verdict {
	return requesterOnly(requester, actor, "only the requester can cancel a request")
}

// MaySubmit says whether actor may see and submit a selection frozen by
// requester: only the requester may; to anyone else it does not exist.
func MaySubmit(requester, actor quarantine.Actor) Verdict {
	return requesterOnly(requester, actor, "only the requester can see and submit their selection")
}

// MayEditPayload says whether actor may edit the payload of an item of a
// request of class made by requester: only the requester, and never for
// same_operation, whose operation must be repeated exactly. An item of a
// request of another class may be same_operation by its own classing
// all the same: JudgeEditItem judges each edit on it.
func MayEditPayload(class Class, requester, actor quarantine.Actor) Verdict {
	v := requesterOnly(requester, actor, "only the requester can edit a request")
	if v.Outcome == Go && neverEdited(Classing{Class: class}) {
		return v.plain(Block, CheckEditClass, "same_operation payloads cannot be edited: the operation must be repeated exactly")
	}
	return v
}

// JudgeEdit says whether actor may replace a payload of a request of class
// made by requester, giving reason: MayEditPayload, and the edit needs a
// reason (approvers and auditors read it beside the change). An edit makes
// the request need one approver whatever its class (JudgeRequest).
func JudgeEdit(class Class, requester, actor quarantine.Actor, reason string) Verdict {
	v := MayEditPayload(class, requester, actor)
	if v.Outcome == Go && strings.TrimSpace(reason) == "" {
		return v.plain(Block, CheckEditReason, "say why the payload is changed: the approver reads it beside the change")
	}
	return v
}

// JudgePayloadChange says whether replacing a payload by one of hash
// edited (hex SHA-256) changes anything: it must differ from the one the
// item holds now (current). The payload received (original, taken at
// ingest) in place of an edit is the edit undone (EditUndone: the item
// sends the payload received again, as if it had never been edited); in
// place of the payload received it is no edit. An edit that sends the
// same bytes would still count as an edit, and an edit is what lets a
// schema_invalid or permanent item go.
func JudgePayloadChange(original, current, edited string) Verdict {
	v := Verdict{Rule: -1, Outcome: Go}
	switch {
	case strings.EqualFold(edited, current) && strings.EqualFold(current, original):
		return v.plain(Block, CheckEditUnchanged, "the new payload is the one received, byte for byte, and the item holds it as received: nothing was edited")
	case strings.EqualFold(edited, current):
		return v.plain(Block, CheckEditUnchanged, "the new payload is the one the item already holds: nothing was edited")
	}
	return v
}

// EditUndone says whether a change JudgePayloadChange lets go, to a
// payload of hash edited, undoes an edit: it puts back the payload
// received (original).
func EditUndone(original, edited string) bool {
	return strings.EqualFold(edited, original)
}

// JudgeUndo says whether an edit of an item may be undone (EditUndone),
// the item judged without it as at the step it was drafted (v: JudgeItem
// AtDraft in a draft, AtRequest in a request waiting for approval). In a
// draft, always: an item the rules refuse without its edit is left out
// with v's sentence, as the draft would have left it out. In a request
// waiting for approval, only when v lets the item go: its items hold their
// dead letters and none is left out after the submit, so the item keeps
// its edit, and cancelling the request drops it.
func JudgeUndo(draft bool, v Verdict) Verdict {
	if draft || v.Outcome == Go {
		return Verdict{Rule: -1, Outcome: Go}
	}
	return v.plain(Block, CheckEditUndo, "without its edit the rules refuse this item ("+v.Reason+"), so it keeps the edit: "+
		"edit it otherwise, or cancel the request to drop it")
}

// JudgeDraftAge says whether a draft made at created may still be
// submitted at now, when drafts live for ttl (0: forever): a selection is
// frozen for review, not kept around to be submitted whenever.
func JudgeDraftAge(created, now time.Time, ttl time.Duration) Verdict {
	v := Verdict{Rule: -1, Outcome: Go}
	if ttl > 0 && !now.Before(created.Add(ttl)) {
		return v.plain(Block, CheckDraftExpired, fmt.Sprintf("this selection expired %s after it was made; select again", formatDuration(ttl)))
	}
	return v
}

// requesterOnly lets only the requester's own identity go (SameIdentity:
// another account with their email is not enough, since a match here
// grants); anyone else is blocked with reason.
func requesterOnly(requester, actor quarantine.Actor, reason string) Verdict {
	v := Verdict{Rule: -1, Outcome: Go}
	if !requester.SameIdentity(actor) {
		return v.plain(Block, CheckNotRequester, reason)
	}
	return v
}

// ApprovalLapsed reports whether actor approved req before and no such
// approval counts any more (it expired under the class's approval_expiry
// of table t, or approved another intent), so that they may approve it
// again. It is pure. false when they never approved it, or an approval of
// theirs still counts (a second click is not a second approval). "They"
// is anyone who may be actor (MayBeOne: each approver as recorded and as
// the directory has them now, each approver and actor under every address
// the console has seen their identity with, Request.KnownAs).
func ApprovalLapsed(t *Table, req Request, actor quarantine.Actor, now time.Time) bool {
	gave, stands := approvalOf(t, req, actor, now)
	return gave && !stands
}

// ApprovalStands reports whether an approval of req by someone who may be
// actor (MayBeOne: each approver as recorded and as the directory has them
// now, each approver and actor under every address the console has seen
// their identity with, Request.KnownAs) still counts at now under table
// t: one person's approval counts once, under however many identities, so
// such a person has nothing left to approve. It is pure; false for a table
// without the class.
func ApprovalStands(t *Table, req Request, actor quarantine.Actor, now time.Time) bool {
	_, stands := approvalOf(t, req, actor, now)
	return stands
}

// approvalOf says whether someone who may be actor approved req (gave),
// and whether such an approval still counts at now (stands).
func approvalOf(t *Table, req Request, actor quarantine.Actor, now time.Time) (gave, stands bool) {
	if t == nil {
		return false, false
	}
	k, _ := t.RequestKnobs(req.Class, req.Union)
	mine := req
	mine.Approvals = nil
	me := req.actor(actor, quarantine.Actor{})
	for _, a := range req.Approvals {
		if req.approver(a).mayBe(me) {
			mine.Approvals = append(mine.Approvals, a)
		}
	}
	if len(mine.Approvals) == 0 {
		return false, false
	}
	valid, _ := validApprovals(k, mine, now)
	return true, len(valid) > 0
}
