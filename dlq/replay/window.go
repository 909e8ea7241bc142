package replay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// WindowReader reads the duplicate window of the stream that stores a
// subject: a replay keeps the original message id, so the broker drops it
// while the original is inside that window.
type WindowReader interface {
	// Window answers for subject; a failure is in the answer
	// (Window.Unreadable), never a guess.
	Window(ctx context.Context, subject string) replaypolicy.Window
	// Fresh answers as Window, from what JetStream says now (an interest
	// stream's consumers included: Window.NoInterest), never from an
	// answer kept: a retry after an unknown outcome relies on the window
	// having held its first publish, and a stream deleted and made again
	// (or edited) since a kept answer would not.
	Fresh(ctx context.Context, subject string) replaypolicy.Window
	// LateCopies is a's window with each of its late copies
	// (replaypolicy.Copy.Late) read: when it copied the subject
	// (Copied), or why it has not yet (Behind); a failure is in the
	// answer (Window.Unreadable).
	LateCopies(ctx context.Context, a replaypolicy.Attempt) replaypolicy.Window
	// Seen tells the reader what a stream is now, as info (read by the
	// worker after a PubAck) says: an answer kept that names the stream
	// with another retention or creation time is no longer given.
	Seen(info *jetstream.StreamInfo)
}

// StreamWindows reads duplicate windows from JetStream and keeps each
// answer for a short while: a stream's window rarely changes, and a bulk
// replay asks for thousands of subjects of the same few streams. It reads
// the account's streams, their subjects and configurations, in one list
// (one API call per 256 streams) and finds each subject's stream in it,
// rather than asking which stream stores each subject and then for that
// stream: a confirm page of 10,000 items with 10,000 subjects made 20,000
// calls.
//
// Every answer comes from the list and is as old as it: the list answers
// until the ttl has passed since it was asked for (not since a subject
// was first found in it), then it is read again, so no window is served
// more than the ttl after JetStream said it. A subject no stream in the
// list takes (a plain NATS target) reads the list again, for a stream
// created since, only when the list is ListRereadAfter old or more and
// this subject has not been looked up in it yet; otherwise the list's
// "no stream" is the answer, so subjects no stream takes cost at most one
// read per ListRereadAfter. One read is in flight at a time, without a
// lock held: callers that need a newer list wait for it (or for their
// context) and then all answer from it, while callers the current list
// answers do not wait. A failed read is not kept: the next caller that
// needs a list reads again.
type StreamWindows struct {
	js      jetstream.JetStream
	ttl     time.Duration
	timeout time.Duration
	now     func() time.Time // the clock the list's age is read on (time.Now)

	mu      sync.Mutex
	list    *streamList           // the newest list read; nil before the first
	reading *listRead             // the read in flight; nil when none
	reads   map[string]streamRead // LateCopies' reads by stream and subject
	lates   map[string]lateRead   // what they showed, by message id and copy (latecopy.go)
	// lateSweepAt is how many lates kept sweeps them (keepLate).
	lateSweepAt int
}

// streamList is the account's streams as asked for at read, and the
// answers it has given by subject: a subject looked up in it, found or
// not, reads no other list while it answers.
type streamList struct {
	streams []listedStream
	read    time.Time
	answers map[string]replaypolicy.Window
	// stale: a fresh read (Fresh) found another stream taking a subject
	// than the list names; it answers no more, and the next caller reads
	// the list again (its copies still serve copiedFresh until then).
	stale bool
}

// listedStream is one stream: the subjects it takes, its window, its
// subject transform (nil: none) and its sources (sourced.go).
type listedStream struct {
	subjects  []string
	window    replaypolicy.Window
	transform *jetstream.SubjectTransformConfig
	sources   []listedSource
	// interest are the filters of an interest-retention stream's
	// consumers (">" for one that takes everything); nil for a stream of
	// another retention. Such a stream stores only what some consumer
	// takes (Window.NoInterest).
	interest []string
}

// listRead is one read of the list: done is closed when list or err is set.
type listRead struct {
	done chan struct{}
	list *streamList
	err  error
}

// maxCachedWindows bounds the answers a list keeps: more distinct subjects
// than this start them again (found ones are found again in the list, no
// call; ones no stream takes may read it again, once per ListRereadAfter).
const maxCachedWindows = 10_000

// DefaultWindowTTL is how long StreamWindows answers from a list of
// streams, measured from when it asked JetStream for it.
const DefaultWindowTTL = 30 * time.Second

// ListRereadAfter is how old a list of streams must be before a subject no
// stream in it takes reads it again (a stream created since).
const ListRereadAfter = time.Second

// NewStreamWindows reads windows on js, answering from a list of streams
// for ttl after it was asked for (DefaultWindowTTL when 0) and waiting at
// most 2 s for a list.
func NewStreamWindows(js jetstream.JetStream, ttl time.Duration) *StreamWindows {
	if ttl <= 0 {
		ttl = DefaultWindowTTL
	}
	return &StreamWindows{js: js, ttl: ttl, timeout: 2 * time.Second, now: time.Now}
}

// Window implements WindowReader.
func (s *StreamWindows) Window(ctx context.Context, subject string) replaypolicy.Window {
	s.mu.Lock()
	if l := s.list; l != nil && !l.stale {
		if age := s.now().Sub(l.read); age < s.ttl {
			if w, ok := l.answers[subject]; ok {
				s.mu.Unlock()
				return w
			}
			if w, ok := l.find(subject); ok || age < ListRereadAfter {
				l.remember(subject, w)
				s.mu.Unlock()
				return w
			}
		}
	}
	r := s.reading
	if r == nil {
		r = &listRead{done: make(chan struct{})}
		s.reading = r
		go s.readList(context.WithoutCancel(ctx), r)
	}
	s.mu.Unlock()

	select {
	case <-r.done:
	case <-ctx.Done():
		return replaypolicy.Window{Unreadable: "which stream stores " + strconv.Quote(subject) + ": " + ctx.Err().Error()}
	}
	if r.err != nil {
		return replaypolicy.Window{Unreadable: "which stream stores " + strconv.Quote(subject) + ": " + r.err.Error()}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l := r.list
	if age := s.now().Sub(l.read); age >= s.ttl {
		return replaypolicy.Window{Unreadable: fmt.Sprintf("which stream stores %q: the list of streams took %s, longer than the %s it answers for", subject, age.Round(time.Millisecond), s.ttl)}
	}
	w, _ := l.find(subject) // none found in the list just read: no stream, the publish will say so
	l.remember(subject, w)
	return w
}

// readList reads the account's streams into r, and makes them the list
// when it succeeds. Its age counts from before the request: an answer is
// never older than it says.
func (s *StreamWindows) readList(ctx context.Context, r *listRead) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	read := s.now()
	var streams []listedStream
	ls := s.js.ListStreams(ctx)
	var consumersErr error
	for info := range ls.Info() {
		if consumersErr != nil {
			continue // the list is not kept: the rest is drained, not read
		}
		var st listedStream
		st, consumersErr = s.listed(ctx, info)
		streams = append(streams, st)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := cmp.Or(ls.Err(), consumersErr); err != nil {
		r.err = fmt.Errorf("list the streams: %w", err)
	} else {
		r.list = &streamList{streams: streams, read: read, answers: map[string]replaypolicy.Window{}}
		s.list = r.list
	}
	s.reading = nil
	close(r.done)
}

// listed is the stream info describes, as a list of streams has it: for
// an interest-retention stream, with the filters of its consumers read
// now (interestOf, two JetStream calls), which both the list and a fresh
// read (Fresh) judge a publish to it by (noInterest).
func (s *StreamWindows) listed(ctx context.Context, info *jetstream.StreamInfo) (listedStream, error) {
	st := listedStream{subjects: info.Config.Subjects, window: windowOf(info), transform: info.Config.SubjectTransform,
		sources: sourcesOf(info.Config)}
	if info.Config.Retention != jetstream.InterestPolicy {
		return st, nil
	}
	var err error
	st.interest, err = s.interestOf(ctx, info.Config.Name)
	return st, err
}

// interestOf reads the filters of the consumers of interest-retention
// stream name (">" for one with none): what the stream stores.
func (s *StreamWindows) interestOf(ctx context.Context, name string) ([]string, error) {
	st, err := s.js.Stream(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("the consumers of interest stream %s: %w", name, err)
	}
	filters := []string{}
	cs := st.ListConsumers(ctx)
	for ci := range cs.Info() {
		switch c := ci.Config; {
		case c.FilterSubject != "":
			filters = append(filters, c.FilterSubject)
		case len(c.FilterSubjects) > 0:
			filters = append(filters, c.FilterSubjects...)
		default:
			filters = append(filters, ">")
		}
	}
	if err := cs.Err(); err != nil {
		return nil, fmt.Errorf("the consumers of interest stream %s: %w", name, err)
	}
	return filters, nil
}

// noInterest says why interest stream st would store nothing of a publish
// to subject, as it stores it (its subject transform applied): "" when a
// consumer takes it, or st is no interest stream.
func (st listedStream) noInterest(subject string) string {
	stored := cmp.Or(storesAs(st.transform, subject), subject)
	if st.interest == nil || takes(st.interest, stored) {
		return ""
	}
	return fmt.Sprintf("stream %s keeps a message only for its consumers (interest retention), and none of them takes %s", st.window.Stream, stored)
}

// windowIn is st's window for a publish to subject, st being the stream
// that takes it: with the streams that copy it as list l has them (none
// when l is nil; copied) and, for an interest stream none of whose
// consumers takes it, why it would store nothing (Window.NoInterest).
func (st listedStream) windowIn(l *streamList, subject string) replaypolicy.Window {
	w := st.window
	if l != nil {
		w = l.copied(w, st.transform, subject)
	}
	w.NoInterest = st.noInterest(subject)
	return w
}

// windowOf is the window of the stream info describes.
func windowOf(info *jetstream.StreamInfo) replaypolicy.Window {
	cfg := info.Config
	return replaypolicy.Window{Stream: cfg.Name, Duplicates: cfg.Duplicates, Retention: retentionName(cfg.Retention), Storage: storageName(cfg.Storage),
		Evicts: evicts(cfg), Created: info.Created, NextSeq: info.State.LastSeq + 1}
}

// Fresh implements WindowReader: the info of the stream the list names
// for subject, read now (one JetStream call); when that stream is gone or
// no longer takes subject, which stream takes it now and its info (two
// more); for an interest-retention stream, its consumers too (two more,
// interestOf), as the list reads them (Window.NoInterest): a first attempt
// sent expecting no stream and answered by one made since the list was
// read is judged by whether any of them takes subject (answeredWindow).
// An answer that could not be read, the consumers included, keeps the
// list's window, with why in Unreadable (a retry past it goes to a person
// while NATS does not answer).
func (s *StreamWindows) Fresh(ctx context.Context, subject string) replaypolicy.Window {
	listed := s.Window(ctx, subject)
	if listed.Unreadable != "" {
		return listed
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	unreadable := func(err error) replaypolicy.Window {
		w := listed
		w.Unreadable = fmt.Sprintf("which stream stores %q now: %s", subject, err)
		return w
	}
	if listed.Stream != "" {
		st, err := s.js.Stream(ctx, listed.Stream)
		switch {
		case err == nil && takes(st.CachedInfo().Config.Subjects, subject):
			w, err := s.copiedFresh(ctx, st.CachedInfo(), subject)
			if err != nil {
				return unreadable(err)
			}
			return w
		case err != nil && !errors.Is(err, jetstream.ErrStreamNotFound):
			return unreadable(err)
		}
	}
	name, err := s.js.StreamNameBySubject(ctx, subject)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		if listed.Stream != "" {
			s.staleList() // the listed stream is gone or gave the subject up
		}
		return replaypolicy.Window{} // no stream takes it now
	case err != nil:
		return unreadable(err)
	}
	s.staleList() // another stream takes the subject than the list names: its streams changed since
	st, err := s.js.Stream(ctx, name)
	if err != nil {
		return unreadable(err) // gone again since it was named: nothing is judged on a guess
	}
	w, err := s.copiedFresh(ctx, st.CachedInfo(), subject)
	if err != nil {
		return unreadable(err)
	}
	return w
}

// staleList marks the newest list stale (streamList.stale): a first
// attempt judged by it after a stream took over its subjects would be
// sent expecting the stream that gave them up.
func (s *StreamWindows) staleList() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.list != nil {
		s.list.stale = true
	}
}

// Seen implements WindowReader: when the newest list names the stream
// info describes with another retention (one updated from limits to
// interest, which JetStream allows) or another creation time (deleted
// and made again), the list is stale (staleList), as for a subject moved
// to another stream: a first attempt judged by it would not be told that
// the stream keeps a message only for its consumers (Window.NoInterest),
// and would be published to be dropped. A stream the list does not name
// changes nothing: its subjects read the list again (Window).
func (s *StreamWindows) Seen(info *jetstream.StreamInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.list == nil || s.list.stale {
		return
	}
	for _, st := range s.list.streams {
		if st.window.Stream != info.Config.Name {
			continue
		}
		if st.window.Retention != retentionName(info.Config.Retention) || !st.window.Created.Equal(info.Created) {
			s.list.stale = true
		}
		return
	}
}

// copiedFresh is the window of the stream info describes, read afresh,
// with the streams that copy it as the newest list has them (at most the
// ttl old: the streams that source a target change as rarely as its
// window, and a retry, which Fresh is read for, is judged by the target's
// own window only), and, for an interest stream, its consumers read now
// (listed): an error when they could not be read.
func (s *StreamWindows) copiedFresh(ctx context.Context, info *jetstream.StreamInfo, subject string) (replaypolicy.Window, error) {
	st, err := s.listed(ctx, info)
	if err != nil {
		return replaypolicy.Window{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return st.windowIn(s.list, subject), nil
}

// takes says whether a stream of subjects takes subject.
func takes(subjects []string, subject string) bool {
	return slices.ContainsFunc(subjects, func(f string) bool { return subjectMatches(f, subject) })
}

// jobWindow is the duplicate window j is judged by before it is published:
// for a retry after an unknown outcome, read afresh (Fresh), since the
// retry relies on it having held the first attempt; for a first attempt,
// from the list kept a while.
func (w *Worker) jobWindow(ctx context.Context, j *job) replaypolicy.Window {
	if w.svc.cfg.Windows == nil || j.firstAttemptAt == nil {
		return w.window(ctx, j.subject)
	}
	return w.svc.cfg.Windows.Fresh(ctx, j.subject)
}

// rereadWindow reads afresh the window the broker's answer to j is judged
// by (replaypolicy.JudgeAck), unless the message the broker kept is shown
// to be its own. A retry that got a PubAck: a retry stored as a new
// message says the window held no earlier publish, and one dropped for a
// message not shown to be ours that it held another, and only the stream
// as it is now (not as the claim read it) tells whether it is the stream
// that took the earlier publish. A first attempt dropped as a Duplicate:
// it is deferred until the kept message's window has passed, and the
// claim's window, from a list kept a while (StreamWindows), may be older
// than the stream's (a window raised since, a stream created since where
// the list has none). A Duplicate keeps the claim's window when the
// stream cannot be read again. A first attempt stored as new by the
// stream the claim's window names is judged by what that stream is now
// (storedAnswer), reads being the claim's streams read so far. Any publish
// stored as new (a first attempt, or a retry) is read back for the
// subject it was stored under (storedUnder).
func (w *Worker) rereadWindow(ctx context.Context, reads claimStreams, j *job, a *replaypolicy.Ack) {
	switch {
	case a.Stream == "" || a.Lost != "" || a.Refused != "" || a.NotSent != "" || a.NoStream || replaypolicy.OursKept(*a):
		return
	case a.FirstAttempt && !a.Duplicate && listedAnswer(j, *a):
		w.storedAnswer(ctx, reads, j, a)
		return
	case a.FirstAttempt && !a.Duplicate && a.Window.Stream == a.Stream && a.Window.NoInterest == "":
		// The claim's list named no stream, and the window read after the
		// answer (answeredWindow) names the one that answered: where it
		// stored the publish, as for a listed answer.
		// (TestRev38StreamMadeSinceTheListStoringUnderAMappedSubjectIsNotReplayed)
		a.StoredUnder, a.UnreadBack = w.storedUnder(ctx, reads, j, a.Stream, a.Seq)
		return
	case a.FirstAttempt && !a.Duplicate:
		return // judged by the window read after the answer, or by another stream's (JudgeAck)
	case !a.Duplicate:
		// A retry stored as new: where, as for a first attempt; a mapping
		// made while the first attempt was lost maps the retry too.
		// (TestRev38RetryStoredUnderAMappedSubjectIsNotReplayed)
		a.StoredUnder, a.UnreadBack = w.storedUnder(ctx, reads, j, a.Stream, a.Seq)
	}
	fresh := replaypolicy.Window{Unreadable: "no window reader is configured"}
	if w.svc.cfg.Windows != nil {
		fresh = w.svc.cfg.Windows.Fresh(ctx, j.subject)
	}
	if fresh.Unreadable != "" && a.Duplicate {
		return
	}
	a.Window = fresh
	if a.NeedsRemoved() {
		a.Removed = w.removed(ctx, a.Stream, a.FirstSentTo.NextSeq, a.Seq)
	}
}

// removed reads what stream no longer holds of its sequences from up to
// before seq (replaypolicy.Removed): its state, and its deleted sequences
// only when it has some past its first (they can be many). Each read is
// fresh, not the claim's (claimStreams): the claim may have read the
// stream before the retry was stored.
func (w *Worker) removed(ctx context.Context, stream string, from, seq uint64) replaypolicy.Removed {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := w.js.Stream(ctx, stream)
	if err != nil {
		return replaypolicy.Removed{Unread: err.Error()}
	}
	state := st.CachedInfo().State
	if state.NumDeleted == 0 || state.FirstSeq >= seq || state.LastSeq < from {
		return replaypolicy.Removed{FirstSeq: state.FirstSeq}
	}
	info, err := st.Info(ctx, jetstream.WithDeletedDetails(true))
	if err != nil {
		return replaypolicy.Removed{Unread: err.Error()}
	}
	r := replaypolicy.Removed{FirstSeq: info.State.FirstSeq}
	for _, d := range info.State.Deleted {
		if d >= from && d < seq {
			r.Deleted = append(r.Deleted, d)
		}
	}
	return r
}

// listedAnswer says whether a, j's first attempt stored as new, was
// answered by the stream the claim's window names, that window saying
// the stream stores the subject (no Window.NoInterest). Only then is the
// stream read again (storedAnswer): the claim's window comes from a list
// of streams, their retention and an interest stream's consumers kept
// for up to DefaultWindowTTL. A window that names no stream was replaced
// by one read after the answer (answeredWindow), and one that names
// another stream than the answer's needs a person (JudgeAck) whatever
// the answering stream holds.
func listedAnswer(j *job, a replaypolicy.Ack) bool {
	return j.window.Stream != "" && a.Window.Stream == a.Stream && a.Window.NoInterest == ""
}

// storedAnswer judges a, j's first attempt that the stream the claim's
// window names acknowledged as a new message (listedAnswer), by that
// stream as it is now rather than as the claim's list had it: a stream
// updated from limits to interest retention (JetStream allows it), or
// deleted and made again so, within the list's DefaultWindowTTL,
// acknowledges a publish none of its consumers takes and stores nothing.
// The stream is read once per claim (claimStreams), and told to the
// window reader (Seen), whose list is stale when the stream's retention or
// creation time differ from it. When the stream is of interest retention
// now, or was by the list, the answer is judged by what it holds
// (interestAnswer). When the server answered that the stream is gone (or
// refused the read), and the list did not name it interest, nothing tells
// whether it stored the publish (Ack.StreamUnread: JudgeAck lets a person
// decide), never Replayed on a guess. When NATS did not answer the read
// (a reconnect, a timeout: the answers of a claim may come just before the
// server goes down), or JetStream answered it with a 5xx (no leader, the
// cluster not available: answered), the list's retention, read within
// DefaultWindowTTL, is taken, as before round 23, and a warning logged:
// handing every first attempt of such a claim to a person on each NATS
// restart costs more than the accepted race it leaves (a stream turned interest within the list's
// 30 s and NATS unanswering right after its PubAck, both at once;
// TestBulkReplaySurvivesNATSRestart). One the list named interest keeps
// round 22's
// reading (interestAnswer, whose read of the message says the stream
// could not be read, and whose fresh window decides).
//
// A stream of another retention is read back once per subject
// (storedUnder), an interest stream's message by message (unseen): an
// account subject mapping to another subject of the same stream stores
// the publish where the subject's consumers do not read it.
// (TestRev37MappingInsideTheStreamIsNotReplayed)
//
// Cost: a stream of another retention (limits) costs one JetStream call
// (its STREAM.INFO) per claim that it answers a first attempt as new in,
// none when the claim read it already (a Duplicate's read-back, kept),
// and one message read per subject of the claim (more when the message
// read is gone: storedUnder); an interest stream the
// first and interestAnswer's.
func (w *Worker) storedAnswer(ctx context.Context, reads claimStreams, j *job, a *replaypolicy.Ack) {
	st, err := reads.stream(ctx, w.js, a.Stream)
	if err == nil && w.svc.cfg.Windows != nil {
		w.svc.cfg.Windows.Seen(st.CachedInfo())
	}
	listed := a.Window.Retention == "interest"
	switch {
	case err != nil && !listed && !answered(err):
		w.log.Warn("the stream that acknowledged a replay could not be read again (no answer from JetStream, or a 5xx: no leader, the cluster not available): judged by the claim's list of streams, which names it "+a.Window.Retention+" retention",
			"request", j.requestID, "job", j.id, "stream", a.Stream, "seq", a.Seq, "msg_id", j.msgID, "err", err)
	case err != nil && !listed:
		a.StreamUnread = err.Error()
	case listed || st.CachedInfo().Config.Retention == jetstream.InterestPolicy:
		w.interestAnswer(ctx, reads, j, a)
	default: // a stream of another retention, read
		a.StoredUnder, a.UnreadBack = w.storedUnder(ctx, reads, j, a.Stream, a.Seq)
	}
}

// storedUnder says under which subject stream stored j's publish at seq
// (its PubAck's), when it carries j's message id and that is not the
// subject the stream stores a publish to j's subject as (unseen's under):
// an account subject mapping to another subject the same stream takes,
// which Nats-Expected-Stream does not catch and whose PubAck is an
// ordinary one. under is "" when it is on that subject. unread says why
// that could not be told ("" when it could): the message is not there to
// read (a work queue's consumer took it, a limit of the stream removed
// it), is not this publish, or could not be read; none of these says
// where it was stored, so unread is never taken for "on the subject"
// (JudgeAck: a person decides; TestRev39MappedReplayConsumedBeforeItsReadBackNeedsAPerson).
//
// A mapping maps every publish of a subject alike (a weighted one this
// does not catch but for the message it reads), so one publish of the
// subject read back answers for every other of the claim: the answer is
// kept per subject per claim (reads), and only a real read is kept. When
// j's own message cannot tell, the claim's other publishes of the subject
// to the same stream are read back in turn (claimStream.answers; each
// message at most once per claim, readBack) until one does: a stream keeping one message per subject removes the first
// of two when it stores the second, and the second is there to read
// (TestRev39ReplayRemovedBeforeItsReadBackIsJudgedByAnotherOfItsSubject).
// When none can (every publish of the subject in the claim taken by a
// work queue's consumer before its read-back, say), nothing proves that
// no mapping is in effect, and the jobs go to a person: no read of the
// broker tells a client the account's mappings, and nothing may be
// published to the subject to find out (its subscribers would get it).
// That costs a person for a replay into a work-queue stream whose
// consumer takes every message of the subject before the worker reads it
// back (milliseconds after the PubAck); it is the price of never showing
// "replayed" for a publish stored where the subject's consumers do not
// read (DESIGN.md, invariant 13). An interest stream's answers are judged
// by interestAnswer instead, which reads each message back but, when it
// is gone, takes a consumer of the subject for the one that took it: a
// mapped replay taken by a consumer of the mapped subject, while the
// original subject has a consumer too, reads as consumed there (left
// alone: on interest streams messages go as soon as every consumer acked
// them, and a person for each of those would be every fan-out replay).
func (w *Worker) storedUnder(ctx context.Context, reads claimStreams, j *job, stream string, seq uint64) (under, unread string) {
	if under, ok := reads[stream].under[j.subject]; ok {
		return under, ""
	}
	unread, under, read := w.readBack(ctx, reads, j.subject, j.msgID, stream, seq)
	for _, o := range reads[stream].answers[j.subject] {
		if read || reads[stream].broken != "" {
			break // told; or the stream stopped answering reads: no other read would tell either
		}
		if o.seq != seq {
			_, under, read = w.readBack(ctx, reads, j.subject, o.msgID, stream, o.seq)
		}
	}
	if !read {
		return "", unread
	}
	if r, ok := reads[stream]; ok {
		if r.under == nil {
			r.under = map[string]string{}
		}
		r.under[j.subject] = under
		reads[stream] = r
	}
	return under, ""
}

// readBack is unseen for storedUnder, each sequence of stream read at
// most once per claim: one that could not tell where the publish was
// stored is kept (claimStream.unread), so the jobs of a subject none of
// whose messages can be read back cost one read each, not one per other
// job of the subject.
//
// Reads that failed for want of an answer (a timeout, NATS away; not a
// message missing or another's), brokenAfter of them in a row, mark the
// stream broken for the claim: every later read back from it returns
// that at once. Otherwise the jobs of a subject would each read every
// other publish of it, 2 s apiece, a claim of 2,048 of one subject for
// an hour past its lease. One failed read alone (a leader election's
// blip) does not: the next job's read may tell the whole subject.
func (w *Worker) readBack(ctx context.Context, reads claimStreams, subject, msgID, stream string, seq uint64) (why, under string, read bool) {
	if why, ok := reads[stream].unread[seq]; ok {
		return why, "", false
	}
	if broken := reads[stream].broken; broken != "" {
		return broken, "", false
	}
	why, under, read, broken := w.unseen(ctx, reads, subject, msgID, stream, seq)
	if r, ok := reads[stream]; ok {
		switch {
		case broken:
			r.noAnswer++
		default:
			r.noAnswer = 0
		}
		if !read {
			if r.unread == nil {
				r.unread = map[uint64]string{}
			}
			r.unread[seq] = why
		}
		if r.noAnswer >= brokenAfter {
			r.broken = fmt.Sprintf("stream %s stopped answering reads in this claim (%s)", stream, why)
		}
		reads[stream] = r
	}
	return why, under, read
}

// brokenAfter is how many reads back from a stream in a row may go
// unanswered before the claim reads it back no more (readBack).
const brokenAfter = 3

// interestAnswer judges a, j's first attempt that an interest stream
// acknowledged as a new message (storedAnswer), by what the broker
// holds now rather than by the claim's list of the stream's consumers
// (kept for up to DefaultWindowTTL: the only consumer of the subject may
// have been deleted since, and then the stream stored nothing). When the
// stream holds our publish at the PubAck's sequence, it stored it, and a
// is left as it is (Replayed). Otherwise (Ack.Unseen) the message was
// stored and a consumer took it, or it was never stored, and the
// subject's window is read afresh (Fresh, its consumers with it) to tell
// them apart: none takes the subject (Window.NoInterest) and it was
// dropped (JudgeAck: blocked, the dead letter let go); one does and it
// was consumed (Replayed); the window could not be read, and a person
// decides (Reconcile), never Replayed on a guess.
//
// One race is left, and accepted: a consumer of the subject made between
// the broker's drop and the fresh read, milliseconds apart, is read as the
// consumer that took the replay, which is then shown replayed though the
// broker stored nothing. Nothing is published a second time on that
// reading, and a service's consumer made in those milliseconds after the
// last one of the subject was deleted is rare. Only interest streams pay
// these reads: one call (the message at the sequence) when the stream
// holds the message, the stream itself being read once per claim
// (claimStreams), about four more (Fresh) when it does not.
func (w *Worker) interestAnswer(ctx context.Context, reads claimStreams, j *job, a *replaypolicy.Ack) {
	a.Unseen, a.StoredUnder, _, _ = w.unseen(ctx, reads, j.subject, j.msgID, a.Stream, a.Seq)
	if a.Unseen == "" || a.StoredUnder != "" {
		return // stored, and not yet consumed; or still there, under another subject (storedUnder)
	}
	fresh := replaypolicy.Window{Unreadable: "no window reader is configured"}
	if w.svc.cfg.Windows != nil {
		fresh = w.svc.cfg.Windows.Fresh(ctx, j.subject)
	}
	a.Window = fresh
}

// unseen says why stream does not show the publish of message id msgID
// to subject as the message at seq (its PubAck's sequence), "" when it
// does: the message there is on the subject the stream stores a publish
// to subject under (storesAs) and carries msgID. A stream that skipped the
// publish (no consumer took its subject) holds nothing at seq, as does one
// whose consumers took it. The message is read whole, payload included (a
// stream's get has no form without it): it is the payload just sent, no
// larger than the server's max_payload. One JetStream call, 2 s at most,
// and the stream's info when the claim has not read it yet (reads). read
// says that the message at seq was read and carries msgID, so that where
// it was stored is known: under is then the subject it is stored under
// when that is not the one above (storedUnder), "" when it is. broken
// says the stream did not answer (its info or the read failed, not for
// a message missing): readBack reads it no more this claim.
func (w *Worker) unseen(ctx context.Context, reads claimStreams, subject, msgID, stream string, seq uint64) (why, under string, read, broken bool) {
	st, err := reads.stream(ctx, w.js, stream)
	if err != nil {
		return fmt.Sprintf("stream %s could not be read (%s)", stream, err), "", false, true
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	m, err := st.GetMsg(ctx, seq)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return fmt.Sprintf("stream %s holds no message at %d now", stream, seq), "", false, false
	case err != nil:
		return fmt.Sprintf("the message at %s:%d could not be read (%s)", stream, seq, err), "", false, true
	}
	to, id := storesAs(st.CachedInfo().Config.SubjectTransform, subject), m.Header.Get(dlq.HeaderNatsMsgID)
	switch {
	case id != msgID || to == "":
		// Not this publish (or the stream's transform could not be built):
		// nothing tells where this one was stored.
		return fmt.Sprintf("the message at %s:%d is not this replay's (subject %q, message id %q)", stream, seq, m.Subject, id), "", false, false
	case m.Subject != to:
		return fmt.Sprintf("the message at %s:%d is not this replay's (subject %q, message id %q)", stream, seq, m.Subject, id), m.Subject, true, false
	}
	return "", "", true, false
}

// claimStreams are the streams the worker read while it judged one
// claim's answers (judgeAcks), by name, each read at most once (its
// STREAM.INFO, 2 s at most): the stream that acknowledged a first attempt
// as new (storedAnswer, unseen) and the stream a Duplicate's kept message
// is read back from (kept) share it. A read that failed is kept as well:
// a NATS that does not answer costs one wait per stream per claim, not
// one per message. nil reads every time and keeps nothing. The reads
// are made after every publish of the claim was sent, so they are no
// older than the claim's answers; a stream changed while those are
// judged (a few seconds at most, AckTimeout) is seen at the next claim.
type claimStreams map[string]claimStream

// claimStream is one read of claimStreams: the stream, or why it could
// not be read.
type claimStream struct {
	st  jetstream.Stream
	err error
	// under is what storedUnder read back, by the job's subject: only a
	// real read (the message found, on the subject or under another).
	under map[string]string
	// answers are the publishes of the claim the stream acknowledged as
	// new, by subject: storedUnder reads them back when a job's own
	// message cannot tell (claimStreams.answered).
	answers map[string][]answerAt
	// unread is why the message at each sequence read back so could not
	// tell where it was stored (readBack); broken, why a read of the
	// stream got no answer, after which it is read back no more.
	unread   map[uint64]string
	noAnswer int // unanswered reads in a row
	broken   string
}

// answerAt is a publish of message id msgID a stream acknowledged as new
// at seq.
type answerAt struct {
	msgID string
	seq   uint64
}

// answered notes that stream acknowledged the publish of message id
// msgID to subject as a new message at seq, before any answer of the
// claim is judged (judgeAcks). It reads nothing.
func (c claimStreams) answered(stream, subject, msgID string, seq uint64) {
	if c == nil {
		return
	}
	r := c[stream]
	if r.answers == nil {
		r.answers = map[string][]answerAt{}
	}
	r.answers[subject] = append(r.answers[subject], answerAt{msgID: msgID, seq: seq})
	c[stream] = r
}

// stream is the stream name as read on js in this claim, reading it now
// when it was not yet.
func (c claimStreams) stream(ctx context.Context, js jetstream.JetStream, name string) (jetstream.Stream, error) {
	if r, ok := c[name]; ok && (r.st != nil || r.err != nil) { // read already (answered notes, reading nothing)
		return r.st, r.err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, name)
	if c != nil {
		r := c[name]
		r.st, r.err = st, err
		c[name] = r
	}
	return st, err
}

// answered reports whether err is the server's answer to a read (the
// stream is gone, or JetStream refused the request), not the want of one.
// A 5xx is JetStream saying it cannot serve yet (no leader, the cluster
// not available: a clustered server restarting), the want of an answer.
func answered(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, jetstream.ErrStreamNotFound) || (errors.As(err, &apiErr) && apiErr.Code < 500)
}

// remember keeps l's answer for subject (mu held).
func (l *streamList) remember(subject string, w replaypolicy.Window) {
	if len(l.answers) >= maxCachedWindows {
		clear(l.answers)
	}
	l.answers[subject] = w
}

// find returns the window of the stream that takes subject (a stream's
// subjects never overlap another's in one account; subjectMatches reads
// their wildcards as the allowlist's), with the streams that copy it
// (copied) and its consumers' interest (windowIn).
func (l *streamList) find(subject string) (replaypolicy.Window, bool) {
	for _, st := range l.streams {
		for _, f := range st.subjects {
			if subjectMatches(f, subject) {
				return st.windowIn(l, subject), true
			}
		}
	}
	return replaypolicy.Window{}, false
}

// copied is w, the window of the stream (of subject transform tr) that
// takes subject, with the streams that copy what it stores of subject
// (copiesOf).
func (l *streamList) copied(w replaypolicy.Window, tr *jetstream.SubjectTransformConfig, subject string) replaypolicy.Window {
	if stored := storesAs(tr, subject); stored != "" {
		w.Copies = l.copiesOf(w.Stream, stored)
	} else {
		w.Copies = l.copiesOf(w.Stream, subject) // the broker's own transform failed to build here: as published
	}
	return w
}

// evicts names the limits of a stream that remove a message before it
// ages out ("" when none): the last N per subject, a count or size whose
// oldest messages go first (discard old), or rollups (allow_rollup_hdrs),
// which let any publisher's message with a Nats-Rollup header purge the
// subject's earlier messages, or the stream's. The broker forgets such a
// message's id when it restarts, inside the window or not. Rollups count
// as nats-server applies them, when the stream also allows purges
// (AllowRollup and not DenyPurge; the server refuses to create a stream
// with both, and with DenyPurge it would refuse a rollup message).
func evicts(cfg jetstream.StreamConfig) string {
	var ls []string
	if cfg.MaxMsgsPerSubject > 0 && !(cfg.Discard == jetstream.DiscardNew && cfg.DiscardNewPerSubject) { // else it refuses the new one
		ls = append(ls, fmt.Sprintf("keeps the last %d per subject", cfg.MaxMsgsPerSubject))
	}
	if cfg.Discard == jetstream.DiscardOld {
		if cfg.MaxMsgs > 0 {
			ls = append(ls, fmt.Sprintf("keeps the last %d messages", cfg.MaxMsgs))
		}
		if cfg.MaxBytes > 0 {
			ls = append(ls, fmt.Sprintf("keeps the last %d bytes", cfg.MaxBytes))
		}
	}
	if cfg.AllowRollup && !cfg.DenyPurge {
		ls = append(ls, "allows rollups: allow_rollup_hdrs lets any message with a Nats-Rollup header purge those before it")
	}
	return strings.Join(ls, ", ")
}

// retentionName and storageName name a stream's retention and storage as
// replaypolicy.Window does (one it does not know as itself: no dedupe is
// assumed to survive a restart there).
func retentionName(r jetstream.RetentionPolicy) string {
	switch r {
	case jetstream.LimitsPolicy:
		return "limits"
	case jetstream.InterestPolicy:
		return "interest"
	case jetstream.WorkQueuePolicy:
		return "workqueue"
	}
	return r.String()
}

func storageName(s jetstream.StorageType) string {
	switch s {
	case jetstream.FileStorage:
		return "file"
	case jetstream.MemoryStorage:
		return "memory"
	}
	return s.String()
}
