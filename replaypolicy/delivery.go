package replaypolicy

import (
	"fmt"
	"strings"
	"time"
)

// A replay publishes under the original message id, so the target stream
// drops it as a duplicate while the original is inside its duplicate
// window. These rules decide when a job may be published and what the
// broker's answer means (DESIGN.md, "Replay semantics, refined").

// Window is what a worker read of the duplicate window of a job's target
// stream.
type Window struct {
	// Unreadable says why the stream's configuration could not be read
	// ("" when it was). A window read afresh for a retry that could not be
	// read keeps what was read of it last, if anything (Stream and the
	// rest): a retry already past that window goes to a person.
	Unreadable string
	// Stream is the stream that stores the subject ("" when none does: the
	// publish will find no stream).
	Stream string
	// Duplicates is the stream's duplicate window.
	Duplicates time.Duration
	// Retention ("limits", "interest", "workqueue") and Storage ("file",
	// "memory") are the stream's ("" when not read). A restarted broker
	// rebuilds its table of message ids from the messages it still
	// stores: a stream that removes what was consumed, or keeps nothing
	// over a restart, forgets an id inside its window (Volatile).
	Retention, Storage string
	// NoInterest says why the stream would acknowledge a publish of the
	// subject and store nothing ("" when it would store it): it keeps a
	// message only for its consumers (interest retention), and none of
	// them takes the subject. The PubAck then names a sequence like any
	// other, and no consumer ever receives the message.
	NoInterest string
	// Evicts names the stream's limits that remove a message before it
	// ages out (the last N per subject; a count or size, discarding the
	// oldest; rollups, which let any publisher's Nats-Rollup header purge
	// the messages before its own): "" when none. The broker forgets an
	// evicted message's id when it restarts (Volatile).
	Evicts string
	// Created is when the stream was created, by the broker's clock (zero:
	// not known). A stream deleted and made again under the same name is
	// a new stream: its duplicate window never saw what the old one
	// stored (Forgets).
	Created time.Time
	// NextSeq is the sequence the stream would store its next message at,
	// as read (its last sequence + 1; zero: not read). The gate records it
	// with a first attempt (SentTo.NextSeq): had that publish landed, it
	// took this sequence or a later one. A window kept a while reads it
	// low, which only widens what a retry's judgement counts (Removed).
	NextSeq uint64
	// Copies are the streams that copy what Stream stores of the subject
	// (they source it, or a stream or mirror that copies it), mirrors
	// left out (a mirror keeps everything it copies; the streams that
	// source one are listed). A stream that sources another drops what
	// its own duplicate window holds the id of: a replay Stream stores
	// would never reach the consumers that read it (Holds). A copy that
	// another copies the target through, with a window no longer than
	// that one's, never holds an id later, and is left out.
	Copies []Copy
}

// Copy is a stream that copies what the target stream stores of a
// subject (Window.Copies).
type Copy struct {
	Stream     string
	Duplicates time.Duration
	// Since is when it can have begun to copy the target at the
	// earliest: the latest creation time, by the broker's clock, of it
	// and of the streams it copies the target through (zero: not known).
	// A stream stores what it sources under a time of its own, so one
	// made after the original copies it then, and its window holds the
	// original's id from then.
	Since time.Time
	// Path is how it copies the target's message: the target and each
	// stream after it to this one (the last), with the subject each
	// stores it as ("" when a transform on the way cannot be built
	// here). From is the stream it copies from directly.
	Path []CopyHop
	// Copied is, for a late copy (Late), the earliest time a worker's
	// reads showed it to hold the target's message by, each stream of its
	// Path having copied the stream before it up to a message stored
	// after the original there (zero: not read): it copied the original
	// no later. A late copy copies what it sources when it catches up
	// with it, after it was made by as long as that takes (a whole
	// backlog, a source link that was down): its creation alone does not
	// say when its window began to hold the original's id.
	Copied time.Time
	// Behind says why a late copy is not known to have copied the
	// target's message yet ("" when it is, or was not read): a stream of
	// its Path is not shown to have copied the stream before it that far.
	// A replay published before it has would reach it inside the
	// original's window, when it catches up, and be dropped there.
	// BehindSince is when a read first found it so (zero: not known): it
	// is read again at a pace that slows the longer it stays behind
	// (BehindRecheck).
	Behind      string
	BehindSince time.Time
}

// MaxBehindRecheck is the longest a first attempt waits before a late
// copy that is behind (Copy.Behind) is read again.
const MaxBehindRecheck = time.Minute

// BehindRecheck is how long after now a late copy behind since c.BehindSince
// is read again: as long as it has been behind (so the reads double their
// spacing), at least a second (or margin) and at most MaxBehindRecheck. A
// link that is down for a day costs a read a minute, not one a second.
func (c Copy) BehindRecheck(now time.Time, margin time.Duration) time.Duration {
	wait := max(margin, time.Second)
	if !c.BehindSince.IsZero() {
		wait = max(wait, now.Sub(c.BehindSince))
	}
	return min(wait, MaxBehindRecheck)
}

// CopyHop is a stream of a copy's Path and the subject it stores the
// target's message as; Mirror: it mirrors the stream before it (keeping
// its sequences).
type CopyHop struct {
	Stream, Subject string
	Mirror          bool
}

// From is the stream c copies the target's message from directly: the
// target, or the last stream between ("" when its Path is not known).
func (c Copy) From() string {
	if len(c.Path) < 2 {
		return ""
	}
	return c.Path[len(c.Path)-2].Stream
}

// Late says whether c began to copy the target after the original may
// have been stored there (storedBy, within margin): it copies the
// original when it catches up with its source, at a time only the copy
// itself tells (Copied, Behind), which a worker reads before a first
// attempt goes (NeedCopies).
func (c Copy) Late(storedBy time.Time, margin time.Duration) bool {
	return !c.Since.IsZero() && c.Since.After(storedBy.Add(-margin))
}

// Hold is how long a message's id is held where the subject's consumers
// read (Window.Holds): By is the stream whose window holds it the
// latest, Duplicates that window, From when that stream stored the
// message (at the latest) and Until when its window lets go of the id.
type Hold struct {
	By         string
	Duplicates time.Duration
	From       time.Time
	Until      time.Time
}

// Holds is the stream whose duplicate window drops a repeat of a
// message's id the latest, of Stream and the streams that copy it
// (Copies): Stream's window counts from stored (when Stream stored the
// message, at the latest), a copy's from the later of copied (when the
// copies can have copied it, at the latest) and when the copy began to
// copy (Since). A first attempt waits for it, and so does one deferred
// by a message not ours. A retry after an unknown outcome is judged by
// Stream's own window only: Stream drops it if the first publish landed,
// and then no stream that copies Stream sees it; if Stream stores it,
// the first did not land, and no copy's window holds the id since the
// original's (its first attempt waited for Holds).
func (w Window) Holds(stored, copied time.Time) Hold {
	h := Hold{By: w.Stream, Duplicates: w.Duplicates, From: stored, Until: stored.Add(w.Duplicates)}
	for _, c := range w.Copies {
		from := copied
		if c.Since.After(from) {
			from = c.Since
		}
		if c.Copied.After(from) {
			from = c.Copied
		}
		if until := from.Add(c.Duplicates); until.After(h.Until) {
			h = Hold{By: c.Stream, Duplicates: c.Duplicates, From: from, Until: until}
		}
	}
	return h
}

// copyNote says, after a reason that waits for h, that the window waited
// for is a copy's, not the target's own: "" when it is Stream's.
func (w Window) copyNote(h Hold) string {
	if h.By == w.Stream {
		return ""
	}
	return fmt.Sprintf("; stream %s copies the subject from stream %s (whose own window is %s), and a replay %s stored before then would never reach %s's consumers",
		h.By, w.Stream, w.Duplicates, w.Stream, h.By)
}

// Volatile says why the stream's duplicate window may not drop a
// republish ("" when it does): a restart of the broker forgets the ids of
// messages the stream no longer stores, and a stream of interest or
// work-queue retention removes what its consumers took, one of memory
// storage everything, one with limits that evict (Evicts) what they
// push out or a rollup purges. A purge by an operator is not foreseen:
// docs/replay.md says not to purge a replay's target inside its window.
func (w Window) Volatile() string {
	switch {
	case w.Storage == "memory":
		return fmt.Sprintf("stream %s keeps its messages in memory, so a restart of the broker forgets the ids of its duplicate window", w.Stream)
	case w.Retention != "" && w.Retention != "limits":
		return fmt.Sprintf("stream %s removes messages its consumers took (%s retention), and a restart of the broker forgets their ids", w.Stream, w.Retention)
	case w.Evicts != "":
		return fmt.Sprintf("stream %s removes messages before they age out (it %s), and a restart of the broker forgets their ids", w.Stream, w.Evicts)
	}
	return ""
}

// Forgets says why the stream's duplicate window, as w reads it at now,
// may not hold the id of a publish made at first (the database's clock,
// margin for the broker's) and sent to sent, "" when it holds it if that
// publish landed: the stream is not the one it was sent to, or its window
// (shortened since, perhaps) no longer covers it (NotSentTo).
func (w Window) Forgets(first time.Time, sent SentTo, margin time.Duration, now time.Time) string {
	// Past the window first: whether or not the stream is the one that saw
	// the first publish, its window no longer covers it, and that says
	// so without leaning on the clocks of two hosts.
	if cover := w.Covers(sent); !now.Before(first.Add(cover - margin)) {
		return fmt.Sprintf("stream %s's duplicate window (%s%s) no longer covers the first publish of %s", w.Stream, cover, raisedSince(w, sent), formatTime(first))
	}
	return w.NotSentTo(first, sent, margin)
}

// SentTo is the stream a job's first attempt was sent to and when it was
// created, as the worker read them in the window it judged the attempt by
// (zero: not known, as for a job from before they were recorded).
type SentTo struct {
	Stream  string
	Created time.Time
	// Duplicates is the stream's duplicate window as the worker read it
	// then (zero: not known). The broker forgets an id by the window in
	// force as it goes: one raised since does not bring back an id
	// forgotten under the shorter one (Covers).
	Duplicates time.Duration
	// NextSeq is the stream's Window.NextSeq as the worker read it then
	// (zero: not known): the first attempt, had it landed, was stored at
	// it or after it (Ack.Removed).
	NextSeq uint64
}

// Covers is how long after a first attempt sent to sent w's stream may
// still hold its id: w's window, or the window sent was judged by when
// that was shorter (raised since: the broker may have forgotten the id
// under it). A window lowered and raised again between two reads of it is
// not seen.
func (w Window) Covers(sent SentTo) time.Duration {
	if sent.Duplicates > 0 && sent.Duplicates < w.Duplicates {
		return sent.Duplicates
	}
	return w.Duplicates
}

// NotSentTo says why w's stream is not the one the publish made at first
// was sent to ("" when it is, or may be). When that stream is known
// (sent), exactly: a stream of another name, or of its name created at
// another time (deleted and made again), is another stream. When it is
// not, by the clocks: a stream created since first, or within margin of
// it, is not the one, and a stream that does not say when it was created
// is taken to be the one that was there. Creation times are compared to
// the microsecond, as the database keeps them (the broker's have
// nanoseconds).
func (w Window) NotSentTo(first time.Time, sent SentTo, margin time.Duration) string {
	if sent.Stream == "" || sent.Created.IsZero() {
		return w.madeSince(first, margin)
	}
	if w.Stream == sent.Stream && !w.Created.IsZero() && w.Created.Truncate(time.Microsecond).Equal(sent.Created.Truncate(time.Microsecond)) {
		return ""
	}
	return fmt.Sprintf("stream %s (created at %s) is not the stream the first publish of %s was sent to (%s, created at %s; deleted and made again, or a new stream for the subject), "+
		"and its duplicate window never saw that publish", w.Stream, formatTime(w.Created), formatTime(first), sent.Stream, formatTime(sent.Created))
}

// madeSince says why w's stream is not the one that took the subject at
// first ("" when it may be), by the clocks: it was created since, or
// within margin.
func (w Window) madeSince(first time.Time, margin time.Duration) string {
	if w.Created.IsZero() || w.Created.Before(first.Add(-margin)) {
		return ""
	}
	return fmt.Sprintf("stream %s was created at %s, after the first publish of %s (or too close to it to tell by the clocks): "+
		"it is not the stream that took the subject then (deleted and made again, or a new stream for the subject), and its duplicate window never saw that publish",
		w.Stream, formatTime(w.Created), formatTime(first))
}

// Attempt is what a worker knows of a job it is about to publish.
type Attempt struct {
	MsgID string
	// StoredBy is the latest time the original can have been stored in the
	// target stream: the earlier of the first failure and the moment the
	// dead letter was stored (the original was stored before either).
	StoredBy time.Time
	// DeadLetteredAt is when the dead letter was stored (the DLQ
	// message's time, by the broker's clock: never a header's). A copy's
	// window (Window.Copies) counts from it, not from StoredBy: for the
	// target's own window a first attempt made too early is harmless (the
	// broker answers Duplicate, and it is deferred), but nothing answers
	// for a copy's (the target stores the replay, the copy drops it), so
	// a time a header supplied (Dlq-First-Failed-At: the failing host's
	// clock, or anyone who may publish to the DLQ subject) never shortens
	// that wait. Zero: StoredBy.
	DeadLetteredAt time.Time
	// FirstAttemptAt is when a worker was first about to publish the job
	// (zero: never, so this is a first attempt); a publish may have landed
	// since. FirstSentTo is the stream it was sent to (SentTo).
	FirstAttemptAt time.Time
	FirstSentTo    SentTo
	Window         Window
	// Margin is added to every window for the clocks of the broker, the
	// database and the producer.
	Margin time.Duration
}

// Holds is how long the original's id is held where the subject's
// consumers read, for a's first attempt (Window.Holds): the target's
// window from StoredBy, the copies' from DeadLetteredAt.
func (a Attempt) Holds() Hold {
	copied := a.DeadLetteredAt
	if copied.IsZero() || copied.Before(a.StoredBy) {
		copied = a.StoredBy
	}
	return a.Window.Holds(a.StoredBy, copied)
}

// Behind is the first of a's late copies that has not copied the
// target's message yet (Copy.Behind).
func (a Attempt) Behind() (Copy, bool) {
	for _, c := range a.Window.Copies {
		if c.Behind != "" {
			return c, true
		}
	}
	return Copy{}, false
}

// unreadLate says whether a late copy of a's window (Copy.Late) has not
// been read: its creation alone does not say when it copied the original.
func (a Attempt) unreadLate() bool {
	for _, c := range a.Window.Copies {
		if c.Late(a.StoredBy, a.Margin) && c.Copied.IsZero() && c.Behind == "" {
			return true
		}
	}
	return false
}

// JudgeWindow says whether a job may be published at now. It is pure. A
// target whose window could not be read waits (nothing is published
// blind), unless it is a retry already past the window as last read
// (Reconcile); one no stream stores goes the first time (the publish then says
// so), and never again after an unknown outcome: no duplicate window can
// drop a second publish there, which a plain subscriber that never
// answers would receive again and again, so a person decides (Reconcile,
// CheckPastWindow). A first
// attempt waits (Defer, Until set) until the original's window has passed
// (StoredBy + Duplicates + Margin): a publish before would be dropped as a
// duplicate, and an attempt made after it makes any later Duplicate answer
// our own; one with a copy made after the original (Copy.Late) goes only
// once that copy was read (Needs NeedCopies until it is) to have copied
// the subject, its window counted from when it did, and is deferred while
// it is behind. A retry after an unknown outcome goes only while the window
// still covers the first attempt (FirstAttemptAt + Duplicates - Margin),
// so that the broker drops it if the first one landed; past that a
// republish could be a second effect, and a person decides (Reconcile).
// So does one of a stream whose window does not survive a restart of the
// broker (Window.Volatile), and one of a stream created since the first
// attempt (deleted and made again, or a new stream for the subject: its
// window never saw that attempt, which may have landed in the stream
// before it and been consumed): never retried blind. A worker reads the
// window of a retry afresh, not from a list kept a while.
func JudgeWindow(a Attempt, now time.Time) Verdict {
	v := Verdict{Rule: -1, Outcome: Go}
	w := a.Window
	switch {
	case w.Unreadable != "" && !a.FirstAttemptAt.IsZero() && w.Stream != "" && !now.Before(a.FirstAttemptAt.Add(w.Covers(a.FirstSentTo)-a.Margin)):
		// Past even the window last read: nothing the stream says now
		// would let the retry go.
		return v.plain(Reconcile, CheckPastWindow, fmt.Sprintf("the publish of %s has no answer on record, and stream %s's duplicate window (%s, as last read; it could not be read again: %s) no longer covers it: "+
			"a republish could be a second effect. Check the target: if it was applied, say so; if not, republish", formatTime(a.FirstAttemptAt), w.Stream, w.Duplicates, w.Unreadable))
	case w.Unreadable != "":
		return v.plain(Wait, CheckWindowUnread, "could not read the duplicate window of the target stream ("+w.Unreadable+"); nothing is published until it can be; will retry")
	case w.Stream == "" && a.FirstAttemptAt.IsZero():
		return v
	case w.NoInterest != "" && a.FirstAttemptAt.IsZero():
		// A retry is a person's already (Volatile: interest retention).
		return noInterest(v, a.MsgID, "was not published", w.NoInterest, "would acknowledge the replay and drop it")
	case w.Stream == "":
		return v.plain(Reconcile, CheckPastWindow, fmt.Sprintf("the publish of %s has no answer on record, and no stream stores the subject, so no duplicate window drops a republish: "+
			"it could be a second effect. Check the target: if it was applied, say so; if not, republish", formatTime(a.FirstAttemptAt)))
	case a.FirstAttemptAt.IsZero():
		if c, ok := a.Behind(); ok {
			// Not yet: when it catches up it copies the original, and
			// then a replay stored before it.
			v = v.plain(Defer, CheckWindow, fmt.Sprintf("deferred: stream %s copies the subject from stream %s, and %s; a replay published now would reach it inside the original's duplicate window (%s) and never reach %s's consumers; will check again",
				c.Stream, c.From(), c.Behind, c.Duplicates, c.Stream))
			v.Until = now.Add(c.BehindRecheck(now, a.Margin))
			return v
		}
		h := a.Holds()
		until := h.Until.Add(a.Margin)
		if !now.Before(until) {
			if a.unreadLate() {
				v.Outcome, v.Needs = Wait, NeedCopies
			}
			return v
		}
		stored := fmt.Sprintf("after the original was stored (at %s at the latest)", formatTime(h.From))
		if h.By != w.Stream {
			stored = fmt.Sprintf("after it copied the original (counted from %s: the latest of the dead letter's stored time, when %s began to copy %s and, for a copy made since, when it was read to have copied the subject)", formatTime(h.From), h.By, w.Stream)
		}
		v = v.plain(Defer, CheckWindow, fmt.Sprintf("deferred until %s: stream %s drops message id %q as a duplicate for %s %s%s",
			formatTime(until), h.By, a.MsgID, h.Duplicates, stored, w.copyNote(h)))
		v.Until = until
		return v
	}
	if why := w.Volatile(); why != "" {
		return v.plain(Reconcile, CheckDedupeVolatile, fmt.Sprintf("the publish of %s has no answer on record, and %s: a republish could be a second effect. "+
			"Check the target: if it was applied, say so; if not, republish", formatTime(a.FirstAttemptAt), why))
	}
	if cover := w.Covers(a.FirstSentTo); !now.Before(a.FirstAttemptAt.Add(cover - a.Margin)) {
		return v.plain(Reconcile, CheckPastWindow, fmt.Sprintf("the publish of %s has no answer on record, and stream %s's duplicate window (%s%s) no longer covers it: a republish could be a second effect. "+
			"Check the target: if it was applied, say so; if not, republish", formatTime(a.FirstAttemptAt), w.Stream, cover, raisedSince(w, a.FirstSentTo)))
	}
	if why := w.NotSentTo(a.FirstAttemptAt, a.FirstSentTo, a.Margin); why != "" {
		return v.plain(Reconcile, CheckPastWindow, fmt.Sprintf("the publish of %s has no answer on record, and %s; whether that publish landed in the stream before it, and was consumed, is unknown: "+
			"a republish could be a second effect. Check the target: if it was applied, say so; if not, republish", formatTime(a.FirstAttemptAt), why))
	}
	return v
}

// NotSentLead begins the reason of a job that was not published, or not
// stored, this time and is tried again later (CheckNotSent): a full
// target stream that discards new messages answers so until someone makes
// room, and the request page counts such items by it.
const NotSentLead = "not published ("

// StillUnknown ends the reason of a job an earlier publish of which got no
// answer, sent back to wait without being published again this time (a
// worker that released it, a retry that was not sent): its outcome is
// still unknown, and it is shown so, never "to go" as if nothing of it had
// been sent.
const StillUnknown = "an earlier publish of it has no answer on record, so whether it landed is still unknown; it is published again under the same message id while the duplicate window covers the first attempt"

// MaxDeferrals is how often the broker may answer that a message that is
// not ours holds the id, a different message each time (CountsDeferral),
// before the job ends suppressed_duplicate: something else keeps
// publishing under it.
const MaxDeferrals = 3

// Ack is the broker's answer to one publish, as the worker read it.
type Ack struct {
	MsgID, Subject string
	// Lost says why no PubAck came ("" when one did); NoStream: no stream
	// stores the subject.
	Lost     string
	NoStream bool
	// Refused says why the message can never be published as it is (the
	// client refused to send it: a header it cannot encode, a payload over
	// the server's max_payload, a subject it cannot publish to; or the
	// broker refused to store it for what it is); "" when not. Nothing of
	// it was stored.
	Refused string
	// NotSent says why the message did not leave the worker although it
	// may another time (the connection is closed or reconnecting), or why
	// the broker said it did not store it for now; "" when not.
	NotSent string
	// Stream and Seq are the PubAck's; Duplicate: the broker already held
	// the id, and Seq is the message it kept.
	Stream    string
	Seq       uint64
	Duplicate bool
	// Kept is, for a Duplicate, the message the broker kept, read back.
	Kept Kept
	// EarlierReplayAt is when another request's replay of another dead
	// letter of the same message id and subject was last handed to NATS,
	// not shown to have missed (the database's clock); zero when none was.
	// EarlierItemReplayAt is the same of another request's replay of this
	// dead letter, which can only have come after it, whatever the clocks
	// say (earlierReplayHeld).
	EarlierReplayAt     time.Time
	EarlierItemReplayAt time.Time
	// Unseen says, for a first attempt acknowledged as a new message by
	// the stream the claim's window names, that stream being of interest
	// retention by that window (which named a consumer of the subject) or
	// as read after the answer (turned interest since), why the stream
	// does not show the publish at Seq now ("" when it does, or was not
	// read): its consumers took it, or it stored nothing, none of them
	// taking the subject (any more).
	// Window is then the subject's window read after the answer, which
	// tells the two apart (Window.NoInterest).
	Unseen string
	// StreamUnread says, for a first attempt acknowledged as a new
	// message by the stream the claim's window names, why that stream
	// could not be read again after the answer: the server said it is
	// gone or refused the read ("" when it was read, was not read, or
	// NATS did not answer: the worker then takes the window's word, and
	// logs it): the claim's window comes from a list of streams kept a
	// while, and a stream turned to interest retention since (or deleted
	// and made again so) acknowledges a publish none of its consumers
	// takes and stores nothing.
	StreamUnread string
	// StoredUnder is, for a publish (a first attempt or a retry) a stream
	// acknowledged as a new message, the subject the message at Seq is stored under when
	// it carries the job's message id but is not stored under the subject
	// the stream stores a publish to the job's subject as (Kept.StoresAs):
	// an account subject mapping sent it to another subject of the same
	// stream, where consumers filtered on the original subject never read
	// it. "" when it is, or when that could not be told (UnreadBack). Read
	// back once per subject per claim.
	StoredUnder string
	// UnreadBack says, for such a publish, why the subject it was stored
	// under could not be told ("" when it could, or it was not read
	// back): the message at Seq is no longer there (a work queue's
	// consumer took it, a limit of the stream removed it), is not this
	// publish, or could not be read, and no other publish of the subject
	// in the claim could be read back in its place. Nothing then shows
	// that no mapping sent it elsewhere.
	UnreadBack string
	// Removed is, for a retry stored as new by the stream its first
	// attempt was sent to, what that stream no longer holds of the
	// sequences the first attempt may have taken there, read after the
	// answer (zero: not read).
	Removed Removed
	// FirstAttempt: no earlier publish of this job can have landed.
	FirstAttempt bool
	// Deferrals is how often the job was deferred by a message not ours,
	// and DeferredBy which message did last ("stream:seq", KeptKey; ""
	// when none, or not recorded): a deferral by that message again does
	// not count (CountsDeferral).
	Deferrals  int
	DeferredBy string
	// FirstAttemptAt is when the job was first about to be published, and
	// FirstSentTo the stream that publish was sent to (SentTo).
	FirstAttemptAt time.Time
	FirstSentTo    SentTo
	// FirstPublishedAt is when the job was first about to be published
	// ever (never reset, unlike FirstAttemptAt; zero when this publish is
	// its first ever), and ApprovedSHA256 the hex SHA-256 of the payload
	// approved: a kept message is ours only if stored since, with that
	// payload (OursKept).
	FirstPublishedAt time.Time
	ApprovedSHA256   string
	// OriginalSHA256 is the hex SHA-256 of the payload the dead letter
	// came with: a kept message carrying it (or the approved one) on the
	// subject is the message sent again (sentAgain).
	OriginalSHA256 string
	// DeadLetteredAt is when the dead letter was stored, as for
	// Attempt: a kept message stored after it was published since.
	DeadLetteredAt time.Time
	// Window and Margin as for JudgeWindow; RetryBase is the first wait
	// after a lost PubAck; Attempts counts the job's claims; Jitter is a
	// random number in [0, 1) for the wait.
	Window    Window
	Margin    time.Duration
	RetryBase time.Duration
	Attempts  int
	Jitter    float64
}

// Removed is what a stream that stored a retry as new (Ack.Stream,
// Ack.Seq) no longer holds of the messages it stored between the job's
// first attempt (FirstSentTo.NextSeq) and the retry, as read after the
// answer. A restarted broker rebuilds its duplicate window from the
// messages its streams still hold: a first attempt that landed, was
// removed (a person deleted or purged it, or a crash lost the unsynced
// tail of a file store) and perhaps applied before, is then forgotten,
// and the retry stored as new (retryGone). A worker reads it only when
// the rules look at it (Ack.NeedsRemoved).
type Removed struct {
	// FirstSeq is the stream's first sequence (zero: not read): it no
	// longer holds any message before it.
	FirstSeq uint64
	// Deleted are the sequences past FirstSeq, and before the retry's,
	// that it no longer holds (removed one by one).
	Deleted []uint64
	// Unread says why the stream could not be read ("" when it was, or
	// need not be: nothing lies between the first attempt and the retry).
	Unread string
}

// NeedsRemoved says whether a, a retry the broker answered, is judged by
// what its stream no longer holds (Removed), which the worker then reads:
// a retry stored as new, past the sequence its first attempt would have
// taken at the earliest, by the stream that attempt was sent to. Rare
// (a lost PubAck whose publish did not land, or was forgotten), so its
// read (one or two JetStream calls) is off the path of every other
// answer.
func (a Ack) NeedsRemoved() bool {
	from := a.FirstSentTo.NextSeq
	return !a.Duplicate && !a.FirstAttempt && from > 0 && a.Stream == a.FirstSentTo.Stream && a.Seq > from
}

// retryGone says why a, a retry stored as new, may have been stored as
// new although its first attempt landed: the stream it was sent to no
// longer holds messages it stored since that attempt was sent, of which
// that publish may have been one; or its sequences went back past it; or
// it could not be read to tell. "" when it holds every one, or nothing is
// known of where the first attempt would have been stored (a job from
// before FirstSentTo.NextSeq was recorded, or a retry answered by another
// stream: retryForgotten).
func retryGone(a Ack) string {
	from := a.FirstSentTo.NextSeq
	switch {
	case a.Duplicate || a.FirstAttempt || from == 0 || a.Stream != a.FirstSentTo.Stream:
		return ""
	case a.Seq < from:
		return fmt.Sprintf("stream %s stored it at a sequence before %d, the one it would have stored that publish at the earliest: it lost its messages from %s:%d on "+
			"(the unsynced tail of its store lost in a crash), that publish may have been one of them, and a broker restarted since forgets the id of a message its stream no longer holds",
			a.Stream, from, a.Stream, a.Seq)
	case a.Seq == from:
		return ""
	case a.Removed.Unread != "":
		return fmt.Sprintf("whether stream %s still holds the messages it stored between that publish and this one (%s:%d to %s:%d) could not be read (%s): "+
			"a broker restarted since forgets the id of a message its stream no longer holds", a.Stream, a.Stream, from, a.Stream, a.Seq-1, a.Removed.Unread)
	}
	var n uint64
	if f := a.Removed.FirstSeq; f > from {
		n = min(f, a.Seq) - from
	}
	for _, d := range a.Removed.Deleted {
		if d >= from && d < a.Seq && d >= a.Removed.FirstSeq {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("stream %s no longer holds %d of the messages it stored between that publish and this one (%s:%d to %s:%d): that publish may have been one of them, "+
		"removed since (deleted, purged, or lost with the unsynced tail of its store in a crash) after a consumer may have applied it, "+
		"and a broker restarted since forgets the id of a message its stream no longer holds", a.Stream, n, a.Stream, from, a.Stream, a.Seq-1)
}

// KeptKey names message seq of stream as Ack.DeferredBy records it.
func KeptKey(stream string, seq uint64) string {
	return fmt.Sprintf("%s:%d", stream, seq)
}

// CountsDeferral says whether a deferral of the job by the message the
// broker kept (a.Stream, a.Seq) counts toward MaxDeferrals: not when the
// same message deferred it last. Suppression says that something else
// keeps publishing under the id, which only new messages show; one
// message holds its id for one window of real time, so its deferrals end
// by themselves, however far the broker's clock is behind the ones its
// window is waited for by.
func (a Ack) CountsDeferral() bool {
	return a.DeferredBy == "" || a.DeferredBy != KeptKey(a.Stream, a.Seq)
}

// Kept is the message the broker kept under a duplicate id.
type Kept struct {
	// Unreadable says why it could not be read ("" when it was).
	Unreadable string
	// Tagged: its Dlq-Replay-Of and Dlq-Replay-Request are this item's and
	// request's. A producer can copy them, so alone they prove nothing
	// (OursKept).
	Tagged bool
	// SameItem: its Dlq-Replay-Of is this item's dead letter, whatever
	// request its Dlq-Replay-Request names (earlierReplayKept); Request
	// is the request it names ("" when that is no request id).
	SameItem bool
	Request  string
	// Replay: it carries a Dlq-Replay-Of, any: a replay by the console (of
	// this dead letter or another of the message), or made to look like
	// one. The ledger answers for the console's replays of a message
	// (CheckLedger) that were recorded, and sentAgain does not. Of is the
	// dead letter it names ("" when that is no id); SameRequest: its
	// Dlq-Replay-Request is this job's request (another item of it);
	// FromOrigin: it is the replay this dead letter came back from (its
	// Dlq-Replay-Of the dead letter's origin, its request that of the
	// origin's first replay).
	Replay      bool
	Of          string
	SameRequest bool
	FromOrigin  bool
	// PayloadSHA256 is the hex SHA-256 of its payload.
	PayloadSHA256 string
	// StoredAt is when the broker stored it.
	StoredAt time.Time
	// Subject is the subject it is stored under, and StoresAs the subject
	// the stream stores a publish to the job's subject under: that subject
	// with the stream's subject transform applied (the stream's
	// configuration as it is now), the subject itself when it has none;
	// "" when it cannot be told (a transform the worker could not build).
	// A copy of the replay stored on another subject the stream takes
	// reached that subject, not the job's (OursKept).
	Subject, StoresAs string
}

// otherSubject says why the kept message k was not stored as a publish to
// the job's subject is ("" when it was): it is stored under another
// subject, or the stream's subject transform could not be applied to
// tell.
func (k Kept) otherSubject(subject string) string {
	switch {
	case k.StoresAs == "":
		return fmt.Sprintf("it is stored under %q, and the stream's subject transform could not be applied to %q to tell whether that is where a publish to it is stored", k.Subject, subject)
	case k.Subject != k.StoresAs:
		return fmt.Sprintf("it is stored under subject %q, not %q: it did not reach the original subject", k.Subject, k.StoresAs)
	}
	return ""
}

// OursKept says whether the message the broker kept under a's id is this
// job's own earlier publish. It is pure. There must be an earlier publish
// (the first one ever keeps nothing of ours), and the message must carry
// this item's and request's replay headers, have been stored at or after
// the job's first publish ever (less Margin, for the clocks of the broker
// and the database), carry the approved payload and be stored under the
// subject the stream stores a publish to the job's subject under (Kept.
// StoresAs): a message planted with copied headers before the replay first
// published, with other bytes, or on another subject the stream takes (a
// copy of the earlier publish, which reached that subject, not the
// original's), is not ours.
func OursKept(a Ack) bool {
	return copiedKept(a) && !a.Kept.StoredAt.Before(a.FirstPublishedAt.Add(-a.Margin)) && a.Kept.otherSubject(a.Subject) == ""
}

// copiedKept says whether the message the broker kept under a's id
// carries what this job's earlier publish carried (this item's and
// request's replay headers and the approved payload), there having been
// one: it is that publish, or a copy of it (OursKept tells them apart by
// when and where it was stored).
func copiedKept(a Ack) bool {
	return taggedKept(a) && !a.FirstPublishedAt.IsZero()
}

// taggedKept says whether the message the broker kept under a's id
// carries this item's and request's replay headers and the approved
// payload, whether or not the job has a publish on record (copiedKept).
func taggedKept(a Ack) bool {
	k := a.Kept
	return k.Unreadable == "" && k.Tagged && a.ApprovedSHA256 != "" && strings.EqualFold(k.PayloadSHA256, a.ApprovedSHA256)
}

// earlierReplayKept says whether the message the broker kept under a's
// id is another request's replay of the message: a replay of this same
// dead letter (its Dlq-Replay-Of this item's, its Dlq-Replay-Request not
// this one's), whenever the broker's clock says it was stored (it can
// only have come after its dead letter, and a DLQ stream's server ahead
// of the target's would put it before, review round 41); or, stored after
// this dead letter was (afterDeadLetter), of another dead letter of the
// message (two consumers gave up on it; another tenant's replay to a
// subject both may replay to), or a later replay of the dead letter this
// one came back from. Only the replay it
// came back from (FromOrigin: linked by Dlq-Replay-Of; or, unlinked, any
// replay stored before this dead letter was) failed again, as this dead
// letter, and its window is waited for; another request's replay stored since,
// whose job a person settled "not applied, leave it" (no ledger row) or
// that is still unsettled, the broker's answer says was stored, whatever
// was said of it since; its consumers may have applied it, or still
// will. Whatever its payload: the earlier request may have replayed an
// edit this one no longer carries. A replay by another item of this
// request (a bulk replay of two dead letters of one message) is waited
// out as before. (A copy planted with these headers costs a person's
// check.)
func earlierReplayKept(a Ack) bool {
	k := a.Kept
	return k.Unreadable == "" && k.Replay && !k.Tagged && !k.SameRequest && !k.FromOrigin && (k.SameItem || afterDeadLetter(a, k.StoredAt))
}

// afterDeadLetter says whether at (the broker's clock, or the database's)
// is more than Margin after a's dead letter was stored: what happened then
// is nothing the dead letter came back from.
func afterDeadLetter(a Ack, at time.Time) bool {
	return at.After(a.DeadLetteredAt.Add(a.Margin))
}

// earlierReplayHeld says whether a Duplicate answer may be for another
// request's replay of this dead letter (EarlierItemReplayAt), or of
// another dead letter of the message handed after this dead letter was
// stored (EarlierReplayAt; none it came back from), that the database
// says was handed to NATS within the window of now: the message the
// broker keeps is then likely that replay, even when it cannot be read
// back (a work-queue or interest stream's consumer took it, a limit
// evicted it). Deferring would publish again once the window has passed,
// a second effect if that replay was applied.
func earlierReplayHeld(a Ack, now time.Time) bool {
	return !earlierHeldAt(a, now).IsZero()
}

// earlierHeldAt is when the earlier replay earlierReplayHeld finds was
// handed (the later of the two when both count); zero: none. A replay of
// this same dead letter counts whatever the clocks say: the DLQ stream's
// server ahead of the database's would otherwise put it before its own
// dead letter (review round 41).
func earlierHeldAt(a Ack, now time.Time) time.Time {
	if !a.Duplicate || a.Window.Duplicates <= 0 {
		return time.Time{}
	}
	within := func(at time.Time) bool { return !at.IsZero() && now.Before(at.Add(a.Window.Duplicates+a.Margin)) }
	var at time.Time
	if within(a.EarlierItemReplayAt) {
		at = a.EarlierItemReplayAt
	}
	if within(a.EarlierReplayAt) && afterDeadLetter(a, a.EarlierReplayAt) && a.EarlierReplayAt.After(at) {
		at = a.EarlierReplayAt
	}
	return at
}

// sentAgain says whether the message the broker kept under a's id, not
// this job's own publish (OursKept) nor any replay (Kept.Replay), is the
// message the job replays sent again outside the console (an outbox's
// retry, a resend by hand): read back, stored more than Margin after the
// dead letter was (both times the broker's, but two streams' leaders', as
// far apart as ingest allows an original and its advisory), under the
// subject a publish to the job's subject is stored under, carrying the
// original's payload or the approved one. The original itself, still held
// by a window longer than the one the first attempt waited for, was stored
// before its dead letter; a message under the id with other bytes, or on
// another subject, is something else. For both the job waits for the
// window (Defer).
func sentAgain(a Ack) bool {
	k := a.Kept
	if !a.Duplicate || k.Unreadable != "" || k.Replay || k.otherSubject(a.Subject) != "" || !k.StoredAt.After(a.DeadLetteredAt.Add(a.Margin)) {
		return false
	}
	return k.PayloadSHA256 != "" && (strings.EqualFold(k.PayloadSHA256, a.OriginalSHA256) || strings.EqualFold(k.PayloadSHA256, a.ApprovedSHA256))
}

// JudgeAck says what the broker's answer means for the job, at now. It is
// pure. A retry after an unknown outcome that the broker refuses or finds
// no stream for: Reconcile (the first publish may have landed; a person
// decides). A message that can never be published as it is: Fail (blocked,
// never retried). One that was not sent, or not stored, this time: Wait
// (tried again later; never "unknown": nothing can have landed). No
// stream: Fail (blocked). No PubAck from a stream whose window does not
// survive a restart (Window.Volatile): Reconcile. No PubAck: Retry, after RetryAfter but
// while the window still covers the first attempt (JudgeWindow then lets a
// person decide). A PubAck of a first attempt that names another stream
// than the one that stores the subject (Window, read after the answer when
// the claim's named none), or any stream for a subject none stores:
// Reconcile (no proof that the broker stored it; the subject's
// subscribers may have applied it). A PubAck of a first attempt from an
// interest stream none of whose consumers takes the subject (the window
// read after the answer: Window.NoInterest): Fail (blocked, as
// JudgeWindow blocks one before its publish; the stream stored nothing,
// and the dead letter is let go, to be replayed again once a consumer
// takes the subject). The window is read after the answer when the
// claim's named no stream, and for an interest stream's answer when the
// stream does not show the publish at its sequence (Unseen): when that
// window says a consumer takes the subject, it took the message
// (Replayed); when it could not be read, Reconcile (consumed or dropped,
// nothing tells). A publish acknowledged as new whose message, read back,
// is under another subject of the stream (StoredUnder: an account
// mapping), or whose subject could not be told, the message gone or
// unreadable and no other of the subject in the claim read in its place
// (UnreadBack): Reconcile. A first attempt acknowledged as new by a stream that
// could not be read again after the answer (StreamUnread: whether it is
// of interest retention now is not known): Reconcile. A PubAck: Replayed; for a retry, only when the window,
// read again after the PubAck, would have held the earlier publish's id
// had it landed (retryForgotten), else Reconcile: it was stored now, and
// the earlier one may have been too. A Duplicate: the broker kept a
// message under the id; when it is our own earlier publish, Replayed; when
// it is another, Defer until its window has passed (the attempt did not
// land), or Suppressed after MaxDeferrals, but for a retry answered by a
// stream that is not the one that took the subject at its earlier publish
// (created since, or another: otherStream), Reconcile; when a retry's kept message is
// ours in all but its stored time (the broker's clock against the
// database's) or its subject (a copy on another subject of the stream),
// Reconcile: a person decides, nothing is published again; when it cannot be read back, a
// first attempt is deferred by a whole window from now, and a retry is
// Reconcile: the first attempt was made after the original's window, but
// anything published under the id since may hold it (the producer's
// outbox, a replay of another dead letter of the message), so an
// unreadable message is no proof that the broker stored ours.
func JudgeAck(a Ack, now time.Time) Verdict {
	v := Verdict{Rule: -1, Outcome: Replayed}
	switch {
	case (a.Refused != "" || a.NoStream) && !a.FirstAttempt:
		// This publish stored nothing, but an earlier one of the job got no
		// answer and may have landed: blocking it would let go of the dead
		// letter, and a new request would replay it again.
		why := a.Refused
		if a.NoStream {
			why = "no stream stores the subject"
		}
		return v.plain(Reconcile, CheckMaybePublished, fmt.Sprintf("message id %q was not published again (%s); but an earlier publish of it has no answer on record and may have landed: "+
			"check the target and say whether it was applied", a.MsgID, why))
	case a.Refused != "":
		return v.plain(Fail, CheckRefused, fmt.Sprintf("message id %q can never be published as it is (%s); nothing was stored: resolve it by hand", a.MsgID, a.Refused))
	case a.NotSent != "" && !a.FirstAttempt:
		// This retry stored nothing, but the earlier publish it retries
		// may have landed: the item is as unknown as before, and counted
		// so, not among the items the broker did not store.
		return lostRetry(a, now, CheckNotSent, fmt.Sprintf("not published again (%s): this retry was not sent, and %s", a.NotSent, StillUnknown))
	case a.NotSent != "":
		v = v.plain(Wait, CheckNotSent, fmt.Sprintf(NotSentLead+"%s): nothing was stored; it is tried again later", a.NotSent))
		v.Until = now.Add(RetryAfter(a.Attempts, a.RetryBase, a.Jitter))
		return v
	case a.NoStream:
		return v.plain(Fail, CheckNoStream, fmt.Sprintf("no stream stores the subject: message id %q was not published", a.MsgID))
	case a.Lost != "" && a.Window.Volatile() != "":
		return v.plain(Reconcile, CheckDedupeVolatile, fmt.Sprintf("no PubAck (%s): whether the broker stored it is unknown, and %s: a republish could be a second effect. "+
			"Check the target: if it was applied, say so; if not, republish", a.Lost, a.Window.Volatile()))
	case a.Lost != "":
		return lostRetry(a, now, CheckAckLost, fmt.Sprintf("no PubAck (%s): whether the broker stored it is unknown; it is published again under the same message id while the duplicate window covers the first attempt", a.Lost))
	case a.FirstAttempt && a.Window.Stream != a.Stream:
		// Only the stream that stores the subject (the publish is sent
		// expecting it, so any other stream refuses it) can answer for
		// what the subject's consumers read: an answer naming another one
		// came from something else (a subscriber of the subject answering
		// the reply inbox) or from a stream the account maps the subject
		// to. The publish went out on the subject all the same, and
		// whatever subscribes to it may have applied it.
		return v.plain(Reconcile, CheckAckUnproven, fmt.Sprintf("an answer to the publish of message id %q names %s:%d, but %s: it is no proof that the broker stored it "+
			"where the subject's consumers read. The message went out on %s, and whatever subscribes to it may have applied it: check the target and say whether it was applied",
			a.MsgID, a.Stream, a.Seq, storedBy(a.Window, a.Subject), a.Subject))
	case !a.Duplicate && a.StoredUnder != "":
		// Stored, but not where the subject's consumers read: the stream
		// took it under the subject the account maps the original one to.
		// A consumer of the stream reading every subject may have applied
		// it; one filtered on the original subject never will. A retry's
		// earlier publish may have landed as well (before the mapping).
		earlier := ""
		if !a.FirstAttempt && !a.FirstAttemptAt.IsZero() {
			earlier = fmt.Sprintf(" This was a retry: an earlier publish of %s has no answer on record and may have landed as well, where the subject's consumers read; check whether it was applied twice.", formatTime(a.FirstAttemptAt))
		}
		return v.plain(Reconcile, CheckAckUnproven, fmt.Sprintf("stream %s stored the publish of message id %q as %s:%d, but under subject %q, not %q: the account maps the subject to another one the stream takes, "+
			"and consumers of the original subject do not read it there. Whatever reads the stream's other subjects may have applied it: check the target and say whether it was applied.%s",
			a.Stream, a.MsgID, a.Stream, a.Seq, a.StoredUnder, a.Subject, earlier))
	case !a.Duplicate && a.UnreadBack != "":
		// Stored by the stream that takes the subject, but under which
		// subject nothing tells: a mapping to another subject of the
		// stream is seen only in the message read back, and a message
		// that is gone (a consumer of the mapped subject may have taken
		// it) is no proof that it was on this one.
		earlier := ""
		if !a.FirstAttempt && !a.FirstAttemptAt.IsZero() {
			earlier = fmt.Sprintf(" This was a retry: an earlier publish of %s has no answer on record and may have landed as well; check whether it was applied twice.", formatTime(a.FirstAttemptAt))
		}
		return v.plain(Reconcile, CheckAckUnproven, fmt.Sprintf("stream %s stored the publish of message id %q as %s:%d, but it could not be read back for the subject it was stored under (%s), "+
			"and no other publish of %s in this claim could be: if the account maps the subject to another one the stream takes, consumers of %s never read it. "+
			"Check the target and say whether it was applied.%s", a.Stream, a.MsgID, a.Stream, a.Seq, a.UnreadBack, a.Subject, a.Subject, earlier))
	case a.FirstAttempt && !a.Duplicate && a.StreamUnread != "":
		// Stored, or dropped by a stream whose retention changed since
		// the claim's list was read: only the stream as it is now tells,
		// and it could not be read.
		return v.plain(Reconcile, CheckWindowUnread, fmt.Sprintf("stream %s acknowledged the publish of message id %q as %s:%d, but the stream could not be read again to tell whether it stored it (%s): "+
			"its retention may have changed since the list of streams the publish was judged by was read, and a stream of interest retention acknowledges a publish none of its consumers takes, "+
			"and stores nothing. Check the target and say whether it was applied", a.Stream, a.MsgID, a.Stream, a.Seq, a.StreamUnread))
	case a.FirstAttempt && !a.Duplicate && a.Window.NoInterest != "":
		// The stream answers such a publish like any other and skips it.
		// JudgeWindow finds it before the publish when the claim's window
		// says so; this one was sent by a window that said otherwise (a
		// stream made since the claim's list was read, the subject's
		// last consumer deleted since, or the stream turned to interest
		// retention since: Unseen) and is judged by the window read
		// after the answer. A retry keeps
		// its handling: it is a person's already (Volatile: interest
		// retention).
		return noInterest(v, a.MsgID, "was not stored", a.Window.NoInterest, fmt.Sprintf("acknowledged the replay (%s:%d) and dropped it, "+
			"keeping its message id for the stream's duplicate window (%s): a replay inside it is dropped as a duplicate and deferred", a.Stream, a.Seq, a.Window.Duplicates))
	case a.FirstAttempt && !a.Duplicate && a.Unseen != "" && a.Window.Unreadable != "":
		// Consumed, or dropped for want of a consumer: only the
		// consumers as they are now tell, and they could not be read.
		return v.plain(Reconcile, CheckWindowUnread, fmt.Sprintf("stream %s acknowledged the publish of message id %q as %s:%d, but %s, and whether a consumer of the stream takes %s "+
			"could not be read (%s): a consumer took it, or the stream stored nothing (interest retention: it keeps a message only for its consumers). "+
			"Check the target and say whether it was applied", a.Stream, a.MsgID, a.Stream, a.Seq, a.Unseen, a.Subject, a.Window.Unreadable))
	case a.FirstAttempt && !a.Duplicate && a.Unseen != "":
		v.Reason = fmt.Sprintf("replayed: published to %s and stored as %s:%d; %s, and a consumer of the stream takes the subject: it took the message (interest retention: the stream removes what its consumers took)",
			a.Subject, a.Stream, a.Seq, a.Unseen)
		return v
	case !a.Duplicate && !a.FirstAttempt && !a.FirstAttemptAt.IsZero():
		// The broker held no message under the id: the earlier publish did
		// not land, or the window no longer holds it. Only a window read
		// after this PubAck tells the two apart. (A retry always carries
		// its earlier publish's time.)
		if why := retryForgotten(a, now); why != "" {
			return v.plain(Reconcile, CheckMaybePublished, fmt.Sprintf("message id %q was published again and stored as %s:%d, but an earlier publish of %s has no answer on record, and %s: "+
				"whether that one landed too, and was applied, is unknown. Check the target and say whether it was applied twice", a.MsgID, a.Stream, a.Seq, formatTime(a.FirstAttemptAt), why))
		}
		v.Reason = fmt.Sprintf("replayed: published to %s and stored as %s:%d", a.Subject, a.Stream, a.Seq)
		return v
	case !a.Duplicate:
		v.Reason = fmt.Sprintf("replayed: published to %s and stored as %s:%d", a.Subject, a.Stream, a.Seq)
		return v
	case OursKept(a):
		return v.plain(Replayed, CheckOwnDuplicate, fmt.Sprintf("replayed: the broker answered Duplicate, and the message it keeps (%s:%d) is this replay's own earlier publish", a.Stream, a.Seq))
	case !a.FirstAttempt && copiedKept(a) && a.Kept.otherSubject(a.Subject) != "":
		// A copy of the earlier publish on another subject: someone read
		// that publish (it may have landed on the original subject, and
		// been applied, before the copy took its id), or made one to look
		// like it. Deferring would publish it again, a second effect if
		// it landed.
		return v.plain(Reconcile, CheckMaybePublished, fmt.Sprintf("the broker answered Duplicate for a retry after an unknown outcome; the message it keeps (%s:%d) carries this replay's headers and approved payload, "+
			"but %s. It is a copy of this replay's earlier publish, or made to look like it: whether that publish landed on %s, and was applied, is unknown. "+
			"Check the target and say whether it was applied", a.Stream, a.Seq, a.Kept.otherSubject(a.Subject), a.Subject))
	case !a.FirstAttempt && copiedKept(a):
		// Ours in all but the time, which is the broker's clock against the
		// database's: deferring would publish it again once the window has
		// passed, a second effect if it is ours, and if it is a copy (ours
		// then dropped for it) a second effect too.
		return v.plain(Reconcile, CheckMaybePublished, fmt.Sprintf("the broker answered Duplicate for a retry after an unknown outcome; the message it keeps (%s:%d) carries this replay's headers and approved payload "+
			"but was stored at %s by the broker's clock, before this replay first published (%s by the database's): it is this replay's own publish if the broker's clock is behind, else a copy. "+
			"Check the target and say whether it was applied", a.Stream, a.Seq, formatTime(a.Kept.StoredAt), formatTime(a.FirstPublishedAt)))
	case a.FirstAttempt && taggedKept(a) && a.Kept.otherSubject(a.Subject) == "":
		// A first attempt (the job's first publish on record, or one after
		// a person's republish) met by a message of this replay, on its
		// subject, not shown to be this publish (OursKept): a publish of
		// it the database no longer records (a PostgreSQL failover that
		// lost the commits of the gate and the record after it, a
		// restore: the job's first publish ever again, with no time on
		// record), or a copy. Deferring would publish again once the
		// window has passed: a second effect if it was applied. (A copy
		// on another subject reached no consumer of this one: the
		// republish waits for its window, below.)
		// (TestRev38FirstAttemptMetByItsOwnUnrecordedPublishIsNotDeferred,
		// TestRev38PublishTheDatabaseLostIsLeftForAPerson)
		before, which := "though the database records no earlier publish of this replay", "a publish of this replay the database has no record of (a PostgreSQL failover that lost commits, a restore), or a copy"
		if !a.FirstPublishedAt.IsZero() {
			before = "before this replay's first publish on record (" + formatTime(a.FirstPublishedAt) + " by the database's clock)"
			which = "this replay's earlier publish if the broker's clock is behind the database's, a publish of this replay the database has no record of (a PostgreSQL failover that lost commits, a restore), or a copy"
		}
		return v.plain(Reconcile, CheckMaybePublished, fmt.Sprintf("the broker answered Duplicate, and the message it keeps (%s:%d) carries this replay's headers and approved payload on its subject, "+
			"stored at %s by the broker's clock, %s: %s. Check the target and say whether it was applied", a.Stream, a.Seq, formatTime(a.Kept.StoredAt), before, which))
	case earlierReplayKept(a) && a.Kept.otherSubject(a.Subject) == "":
		// An earlier request's replay of this dead letter (review round
		// 39), or of another dead letter of the message (round 40), stored
		// on its subject within the window: deferring would publish the
		// message again once the window has passed, a second effect if
		// the first was applied, or is applied once its consumers catch
		// up. The ledger says nothing of it when a person settled that
		// replay "not applied", nor while it is unsettled.
		// (TestRev39EarlierRequestsReplayOfTheItemIsLeftForAPerson,
		// TestRev40ReplayOfAnotherDeadLetterOfTheMessageIsLeftForAPerson)
		by := "another replay request"
		if a.Kept.Request != "" {
			by = "replay request " + a.Kept.Request
		}
		what := "an earlier replay of this dead letter"
		switch {
		case a.Kept.SameItem:
		case a.Kept.Of != "":
			what = "a replay of dead letter " + a.Kept.Of + ", another dead letter of this message (its id and subject)"
		default:
			what = "a replay of another dead letter of this message (its id and subject), or made to look like one"
		}
		return v.plain(Reconcile, CheckMaybePublished, fmt.Sprintf("the broker answered Duplicate, and the message it keeps (%s:%d) is %s, "+
			"by %s, stored at %s by the broker's clock on %s: the broker stored that replay, whatever was said of it since, and its consumers may have applied it or still will. "+
			"Check the target and say whether it was applied", a.Stream, a.Seq, what, by, formatTime(a.Kept.StoredAt), a.Subject))
	case earlierReplayHeld(a, now) && (a.Kept.Unreadable != "" || earlierReplayKept(a)):
		// The same, with the message gone or unreadable, or on another
		// subject: another request handed this dead letter's replay to
		// NATS within the window.
		// (TestRev39EarlierReplayTakenBeforeTheNewRequestIsNotPublishedAgain)
		why := "it could not be read back (" + a.Kept.Unreadable + ")"
		if a.Kept.Unreadable == "" {
			why = a.Kept.otherSubject(a.Subject)
		}
		return v.plain(Reconcile, CheckMaybePublished, fmt.Sprintf("the broker answered Duplicate for message id %q, and another replay request handed this dead letter's replay to NATS (or one of another dead letter of the message) at %s, "+
			"within the window; the message it keeps (%s:%d) is likely that replay, though %s. The broker stored that replay, whatever was said of it since, and its consumers may have applied it. "+
			"Check the target and say whether it was applied", a.MsgID, formatTime(earlierHeldAt(a, now)), a.Stream, a.Seq, why))
	case !a.FirstAttempt && !a.FirstAttemptAt.IsZero() && a.Window.Unreadable == "" && otherStream(a) != "":
		// A message the window holds that is not shown to be ours, in a
		// stream that never saw the earlier publish: that one may have
		// landed in the stream before, and deferring would publish again.
		return v.plain(Reconcile, CheckMaybePublished, fmt.Sprintf("the broker dropped the retry of message id %q as a duplicate of %s:%d, which is not shown to be this replay's; "+
			"an earlier publish of %s has no answer on record, and %s: whether that one landed, and was applied, is unknown. Check the target and say whether it was applied",
			a.MsgID, a.Stream, a.Seq, formatTime(a.FirstAttemptAt), otherStream(a)))
	case a.Kept.Unreadable != "" && !a.FirstAttempt:
		// Nothing tells whose it is: anything published under the id
		// inside the window since the first attempt (the producer sending
		// the original again, a replay of another dead letter of the
		// message) may hold it, and then nothing of this replay was
		// stored. Deferring would publish again once the window has
		// passed, a second effect if it is ours.
		return v.plain(Reconcile, CheckMaybePublished, fmt.Sprintf("the broker answered Duplicate for a retry after an unknown outcome, and the message it keeps (%s:%d) could not be read back (%s): "+
			"it is this replay's earlier publish, or another message published under message id %q since, and then nothing of this replay was stored. "+
			"Check the target and say whether it was applied", a.Stream, a.Seq, a.Kept.Unreadable, a.MsgID))
	case sentAgain(a):
		// No replay, but the message itself: its subject and bytes, stored
		// after it was dead-lettered. Its producer sent it again (an
		// outbox's retry, a hand resend): the subject's consumers may have
		// applied it. Deferring would publish it once more when that
		// message's window passes, a second effect.
		return v.plain(Reconcile, CheckSentAgain, fmt.Sprintf("the broker dropped the publish as a duplicate of %s:%d, stored at %s: the message itself (message id %q, the same subject and payload), "+
			"published again after it was dead-lettered (%s): not this replay's, nor any replay by the console. Its consumers may have applied it: check the target and say whether it was applied",
			a.Stream, a.Seq, formatTime(a.Kept.StoredAt), a.MsgID, formatTime(a.DeadLetteredAt)))
	case a.Deferrals+1 >= MaxDeferrals && a.CountsDeferral():
		return v.plain(Suppressed, CheckSuppressed, fmt.Sprintf("not replayed: the broker dropped message id %q as a duplicate of %s:%d, a message that is not this replay's, %d times; "+
			"something else keeps publishing under this id. Check the target stream, then replay again or resolve it by hand", a.MsgID, a.Stream, a.Seq, a.Deferrals+1))
	}
	from, seen, copied := a.Kept.StoredAt, "stored at "+formatTime(a.Kept.StoredAt), ""
	if why := a.Kept.otherSubject(a.Subject); copiedKept(a) && why != "" {
		copied = " (it carries this replay's headers and approved payload, but " + why + ")"
	}
	if a.Kept.Unreadable != "" {
		from, seen = now, "that could not be read back ("+a.Kept.Unreadable+")"
	}
	// The copies of the target hold that message's id too, each from when
	// it copied it (or began to copy the target, if later).
	h := a.Window.Holds(from, from)
	until := h.Until.Add(a.Margin)
	if !until.After(now) {
		// The broker still keeps the id past the window by the clocks
		// here: its clock is behind theirs, by at least how far past the
		// window now is. Waiting that long again (at least the margin, at
		// most the window, for which one message holds its id in real
		// time) doubles the wait at each deferral by the same message.
		until = now.Add(min(max(a.Margin, now.Sub(h.Until)), max(a.Margin, h.Duplicates)))
	}
	v = v.plain(Defer, CheckDuplicateKept, fmt.Sprintf("deferred until %s: the broker dropped the publish as a duplicate of %s:%d, a message %s that is not this replay's%s; "+
		"it is published again once that message's duplicate window (%s) has passed%s", formatTime(until), a.Stream, a.Seq, seen, copied, h.Duplicates, a.Window.copyNote(h)))
	v.Until = until
	return v
}

// noInterest is v decided by CheckNoInterest: Fail (blocked), the dead
// letter of message id msgID let go, to be replayed again once a consumer
// of the stream takes the subject. what says what became of the replay
// ("was not published"), why is Window.NoInterest, and broker what the
// broker does with such a publish.
func noInterest(v Verdict, msgID, what, why, broker string) Verdict {
	return v.plain(Fail, CheckNoInterest, fmt.Sprintf("message id %q %s: %s, so the broker %s. Replay it again once a consumer takes the subject", msgID, what, why, broker))
}

// lostRetry is the verdict on a publish of a whose outcome is unknown
// (Retry, check, reason): published again after RetryAfter, or sooner
// when that would be past the window's cover of the first attempt (one
// more try inside it; JudgeWindow then lets a person decide).
func lostRetry(a Ack, now time.Time, check, reason string) Verdict {
	v := Verdict{Rule: -1}.plain(Retry, check, reason)
	v.Until = now.Add(RetryAfter(a.Attempts, a.RetryBase, a.Jitter))
	if latest := a.FirstAttemptAt.Add(a.Window.Covers(a.FirstSentTo) - a.Margin); !a.FirstAttemptAt.IsZero() && v.Until.After(latest) && latest.After(now) {
		v.Until = now.Add(latest.Sub(now) / 2) // one more try inside the window
	}
	return v
}

// storedBy says which stream stores subject by w, the window read for
// it after the answer came.
func storedBy(w Window, subject string) string {
	switch {
	case w.Unreadable != "":
		return fmt.Sprintf("which stream stores %s could not be read (%s)", subject, w.Unreadable)
	case w.Stream == "":
		return fmt.Sprintf("no stream stores %s", subject)
	}
	return fmt.Sprintf("stream %s stores %s, and the publish was sent expecting it", w.Stream, subject)
}

// retryForgotten says why the window a (a retry the broker stored as new)
// was judged with, read after its PubAck, may not have held the id of the
// job's earlier publish, "" when it held it had that publish landed (so it
// did not): the window could not be read; the subject's stream is not the
// one that stored the retry (its subjects moved); the stream was made
// again since the earlier publish, its window no longer covers it, or
// does not survive a restart of the broker; or the stream no longer holds
// a message it stored since the earlier publish was sent, which a broker
// restarted since forgets the id of (retryGone).
func retryForgotten(a Ack, now time.Time) string {
	w := a.Window
	switch {
	case w.Unreadable != "":
		return "the target stream could not be read again to tell whether its duplicate window still held that publish (" + w.Unreadable + ")"
	case otherStream(a) != "":
		return otherStream(a)
	case w.Volatile() != "":
		return w.Volatile()
	}
	if why := w.Forgets(a.FirstAttemptAt, a.FirstSentTo, a.Margin, now); why != "" {
		return why
	}
	return retryGone(a)
}

// otherStream says why the stream that answered a retry a (its window
// read after the PubAck) is not the one that took the subject at the
// job's earlier publish, "" when it may be.
func otherStream(a Ack) string {
	if a.Window.Stream != a.Stream {
		return fmt.Sprintf("the subject is taken by stream %q now, not by %s that answered the retry: its streams changed since", a.Window.Stream, a.Stream)
	}
	return a.Window.NotSentTo(a.FirstAttemptAt, a.FirstSentTo, a.Margin)
}

// Retry waits: the first is the worker's base wait, each next one twice
// as long, at most MaxRetryWait, each scaled by a jitter between half and
// one and a half (so workers that lost acks together do not retry
// together).
const MaxRetryWait = 30 * time.Second

// RetryAfter is the wait before retry attempt (1 for the first) with base
// wait base and jitter in [0, 1).
func RetryAfter(attempt int, base time.Duration, jitter float64) time.Duration {
	d := base
	for i := 1; i < attempt && d < MaxRetryWait; i++ {
		d *= 2
	}
	d = min(d, MaxRetryWait)
	return time.Duration(float64(d) * (0.5 + min(max(jitter, 0), 1)))
}

// raisedSince says, for a message, that w's window was raised since the
// first attempt sent to sent was judged by a shorter one ("" when not).
func raisedSince(w Window, sent SentTo) string {
	if w.Covers(sent) < w.Duplicates {
		return fmt.Sprintf(", as it was at the first publish; it is %s now, but a window raised since does not bring back an id the broker forgot", w.Duplicates)
	}
	return ""
}
