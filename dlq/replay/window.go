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
// calls. A subject no stream in the list takes reads the list again (a
// stream created since). Failures are not kept.
type StreamWindows struct {
	js      jetstream.JetStream
	ttl     time.Duration
	timeout time.Duration

	mu    sync.Mutex
	cache map[string]cachedWindow // by subject

	listMu sync.Mutex // one list read at a time; held while it is read
	list   streamList
}

type cachedWindow struct {
	w       replaypolicy.Window
	expires time.Time
}

// streamList is the account's streams as read at read.
type streamList struct {
	streams []listedStream
	read    time.Time
}

// listedStream is one stream: the subjects it takes, and its window.
type listedStream struct {
	subjects []string
	window   replaypolicy.Window
}

// maxCachedWindows bounds the cache: a selection with more distinct
// subjects than this starts it again.
const maxCachedWindows = 10_000

// DefaultWindowTTL is how long StreamWindows keeps an answer.
const DefaultWindowTTL = 30 * time.Second

// NewStreamWindows reads windows on js, keeping each answer for ttl
// (DefaultWindowTTL when 0) and waiting at most 2 s for one.
func NewStreamWindows(js jetstream.JetStream, ttl time.Duration) *StreamWindows {
	if ttl <= 0 {
		ttl = DefaultWindowTTL
	}
	return &StreamWindows{js: js, ttl: ttl, timeout: 2 * time.Second, cache: map[string]cachedWindow{}}
}

// Window implements WindowReader.
func (s *StreamWindows) Window(ctx context.Context, subject string) replaypolicy.Window {
	now := time.Now()
	s.mu.Lock()
	c, ok := s.cache[subject]
	s.mu.Unlock()
	if ok && now.Before(c.expires) {
		return c.w
	}
	w := s.read(ctx, subject, now)
	if w.Unreadable != "" {
		return w
	}
	s.mu.Lock()
	if len(s.cache) >= maxCachedWindows {
		clear(s.cache)
	}
	s.cache[subject] = cachedWindow{w: w, expires: now.Add(s.ttl)}
	s.mu.Unlock()
	return w
}

// read finds the stream that stores subject in the list of streams (read
// again when it is older than the ttl, or when no stream in it takes the
// subject and it was read before asked, at).
func (s *StreamWindows) read(ctx context.Context, subject string, asked time.Time) replaypolicy.Window {
	s.listMu.Lock()
	defer s.listMu.Unlock()
	if s.list.read.IsZero() || time.Since(s.list.read) >= s.ttl {
		if err := s.readList(ctx); err != nil {
			return replaypolicy.Window{Unreadable: "which stream stores " + strconv.Quote(subject) + ": " + err.Error()}
		}
	}
	if w, ok := s.list.find(subject); ok || !s.list.read.Before(asked) {
		return w // none found in a list read since: no stream, the publish will say so
	}
	if err := s.readList(ctx); err != nil {
		return replaypolicy.Window{Unreadable: "which stream stores " + strconv.Quote(subject) + ": " + err.Error()}
	}
	w, _ := s.list.find(subject)
	return w
}

// readList reads the account's streams (listMu held).
func (s *StreamWindows) readList(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	read := time.Now()
	var streams []listedStream
	l := s.js.ListStreams(ctx)
	for info := range l.Info() {
		cfg := info.Config
		streams = append(streams, listedStream{subjects: cfg.Subjects, window: replaypolicy.Window{Stream: cfg.Name, Duplicates: cfg.Duplicates,
			Retention: retentionName(cfg.Retention), Storage: storageName(cfg.Storage), Evicts: evicts(cfg)}})
	}
	if err := l.Err(); err != nil {
		return fmt.Errorf("list the streams: %w", err)
	}
	s.list = streamList{streams: streams, read: read}
	return nil
}

// find returns the window of the stream that takes subject (a stream's
// subjects never overlap another's in one account; subjectMatches reads
// their wildcards as the allowlist's).
func (l streamList) find(subject string) (replaypolicy.Window, bool) {
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
