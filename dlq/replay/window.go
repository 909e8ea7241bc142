package replay

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarantine-console/quarantine/replaypolicy"
)

// WindowReader reads the duplicate window of the stream that stores a
// subject: a replay keeps the original message id, so the broker drops it
// while the original is inside that window.
type WindowReader interface {
	// Window answers for subject; a failure is in the answer
	// (Window.Unreadable), never a guess.
	Window(ctx context.Context, subject string) replaypolicy.Window
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

	mu      sync.Mutex
	list    *streamList // the newest list read; nil before the first
	reading *listRead   // the read in flight; nil when none
}

// streamList is the account's streams as asked for at read, and the
// answers it has given by subject: a subject looked up in it, found or
// not, reads no other list while it answers.
type streamList struct {
	streams []listedStream
	read    time.Time
	answers map[string]replaypolicy.Window
}

// listedStream is one stream: the subjects it takes, and its window.
type listedStream struct {
	subjects []string
	window   replaypolicy.Window
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
	return &StreamWindows{js: js, ttl: ttl, timeout: 2 * time.Second}
}

// Window implements WindowReader.
func (s *StreamWindows) Window(ctx context.Context, subject string) replaypolicy.Window {
	s.mu.Lock()
	if l := s.list; l != nil {
		if age := time.Since(l.read); age < s.ttl {
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
	if age := time.Since(l.read); age >= s.ttl {
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
	read := time.Now()
	var streams []listedStream
	ls := s.js.ListStreams(ctx)
	for info := range ls.Info() {
		cfg := info.Config
		streams = append(streams, listedStream{subjects: cfg.Subjects, window: replaypolicy.Window{Stream: cfg.Name, Duplicates: cfg.Duplicates,
			Retention: retentionName(cfg.Retention), Storage: storageName(cfg.Storage), Evicts: evicts(cfg)}})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := ls.Err(); err != nil {
		r.err = fmt.Errorf("list the streams: %w", err)
	} else {
		r.list = &streamList{streams: streams, read: read, answers: map[string]replaypolicy.Window{}}
		s.list = r.list
	}
	s.reading = nil
	close(r.done)
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
// their wildcards as the allowlist's).
func (l *streamList) find(subject string) (replaypolicy.Window, bool) {
	for _, st := range l.streams {
		for _, f := range st.subjects {
			if subjectMatches(f, subject) {
				return st.window, true
			}
		}
	}
	return replaypolicy.Window{}, false
}

// evicts names the limits of a stream that remove a message before it
// ages out ("" when none): the last N per subject, or a count or size
// whose oldest messages go first (discard old). The broker forgets such a
// message's id when it restarts, inside the window or not.
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
