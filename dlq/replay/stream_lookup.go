package replay

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// streamLookups answers which stream stores a subject, asking the
// JetStream API at most once a second per subject: when a stream's leader
// goes down, every publish in flight to it comes back unanswered at once,
// and one question answers them all.
type streamLookups struct {
	mu      sync.Mutex
	answers map[string]streamLookup
}

type streamLookup struct {
	stream string // "": no stream stores the subject
	err    error
	at     time.Time
}

// streamLookupFor is how long an answer is reused, and streamLookupTimeout
// how long the API is waited for.
const (
	streamLookupFor     = time.Second
	streamLookupTimeout = 2 * time.Second
)

// stores returns the stream that stores subject, "" when none does, or
// why that could not be read.
func (l *streamLookups) stores(ctx context.Context, js jetstream.JetStream, subject string) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a, ok := l.answers[subject]; ok && time.Since(a.at) < streamLookupFor {
		return a.stream, a.err
	}
	ctx, cancel := context.WithTimeout(ctx, streamLookupTimeout)
	defer cancel()
	stream, err := js.StreamNameBySubject(ctx, subject)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		stream, err = "", nil
	}
	if l.answers == nil {
		l.answers = map[string]streamLookup{}
	}
	for s, a := range l.answers { // kept small: answers of the last second only
		if time.Since(a.at) >= streamLookupFor {
			delete(l.answers, s)
		}
	}
	l.answers[subject] = streamLookup{stream: stream, err: err, at: time.Now()}
	return stream, err
}
