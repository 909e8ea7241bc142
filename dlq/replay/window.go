package replay

import (
	"context"
	"errors"
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

// StreamWindows reads duplicate windows from JetStream (the stream that
// stores the subject, then its configuration) and keeps each answer for a
// short while: a stream's window rarely changes, and a bulk replay asks for
// the same few subjects thousands of times. Failures are not kept.
type StreamWindows struct {
	js      jetstream.JetStream
	ttl     time.Duration
	timeout time.Duration

	mu    sync.Mutex
	cache map[string]cachedWindow
}

type cachedWindow struct {
	w       replaypolicy.Window
	expires time.Time
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
	w := s.read(ctx, subject)
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

// read asks JetStream which stream stores subject and what its window is.
func (s *StreamWindows) read(ctx context.Context, subject string) replaypolicy.Window {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	name, err := s.js.StreamNameBySubject(ctx, subject)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return replaypolicy.Window{} // no stream: the publish will say so
	}
	if err != nil {
		return replaypolicy.Window{Unreadable: "which stream stores " + strconv.Quote(subject) + ": " + err.Error()}
	}
	st, err := s.js.Stream(ctx, name)
	if err != nil {
		return replaypolicy.Window{Unreadable: "stream " + name + ": " + err.Error()}
	}
	cfg := st.CachedInfo().Config
	return replaypolicy.Window{Stream: name, Duplicates: cfg.Duplicates, Retention: retentionName(cfg.Retention), Storage: storageName(cfg.Storage),
		Evicts: evicts(cfg)}
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
