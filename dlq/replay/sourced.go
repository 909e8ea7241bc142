package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarantine-console/quarantine/replaypolicy"
)

// A stream that sources another (not a mirror) applies its own duplicate
// window to the Nats-Msg-Id of what it sources: the broker skips that
// check only for a mirror. A replay the target stream stores is dropped
// there while that stream's window still holds the original's id, and the
// consumers that read it never receive it. So a subject's window, for a
// first attempt, is the longest of its stream's and of every stream that
// copies it, each counted from when it copied the original
// (replaypolicy.Window.Holds). Only the streams of the console's
// own account and JetStream domain are listed: one elsewhere that sources
// the target is not seen (docs/replay.md, "The duplicate window").

// listedSource is a source, or the mirror, of a listed stream: which
// stream it copies, which of its subjects and as what.
type listedSource struct {
	stream string
	// filter is the source's filter subject ("" or ">": all), and
	// transforms its subject transforms, each also a filter (when there
	// are any, the filter is not used: the broker refuses both).
	filter     string
	transforms []jetstream.SubjectTransformConfig
	// all: it copies what a consumer of the stream delivers, whose filter
	// the list does not say: every subject is taken to be copied.
	all bool
	// mirror: it keeps everything it copies (no duplicate window), but
	// the streams that source the mirror have theirs.
	mirror bool
}

// sourcesOf are the sources, and the mirror, of a stream of cfg. One in
// another account or JetStream domain (External, Domain) names a stream
// the list cannot tell from the target of the same name: it is taken to
// be the target's copy (a longer wait, never a replay dropped unseen).
func sourcesOf(cfg jetstream.StreamConfig) []listedSource {
	var out []listedSource
	add := func(s *jetstream.StreamSource, mirror bool) {
		if s == nil {
			return
		}
		out = append(out, listedSource{stream: s.Name, filter: s.FilterSubject, transforms: s.SubjectTransforms, all: s.Consumer != nil, mirror: mirror})
	}
	add(cfg.Mirror, true)
	for _, s := range cfg.Sources {
		add(s, false)
	}
	return out
}

// copies says whether s copies a message stored under subject in the
// stream it names, and the subject it copies it as: the first of its
// transforms whose source matches, applied as the broker applies it;
// subject itself when it has none. "" with true: copied, under a subject
// a transform the worker cannot build makes (so where it goes from there
// is not known).
func (s listedSource) copies(subject string) (string, bool) {
	switch {
	case s.all:
		return subject, true
	case len(s.transforms) == 0:
		return subject, s.filter == "" || subjectMatches(s.filter, subject)
	}
	for _, tr := range s.transforms {
		if tr.Source == "" || subjectMatches(tr.Source, subject) {
			return storesAs(&tr, subject), true
		}
	}
	return "", false
}

// maxCopySteps bounds the streams a subject's copies are followed through
// (sources that source each other, transforms that lengthen a subject at
// each turn).
const maxCopySteps = 1000

// copiesOf are the streams that copy what stream stores under subject
// (they source it, or a stream or mirror that copies it, with a filter
// that takes the subject as it is stored there), mirrors left out, each
// with when it can have begun to copy stream (the latest creation time
// of it and the streams between: a stream created after the original
// copies it then, with a fresh time), but those another holds an id
// longer than (latestCopies).
func (l *streamList) copiesOf(stream, subject string) []replaypolicy.Copy {
	type at struct{ stream, subject string }
	type visit struct {
		at
		since time.Time
		path  []replaypolicy.CopyHop
	}
	var out []replaypolicy.Copy
	seen := map[at]time.Time{{stream, subject}: {}}
	queue := []visit{{at{stream, subject}, time.Time{}, []replaypolicy.CopyHop{{Stream: stream, Subject: subject}}}}
	for steps := 0; len(queue) > 0 && steps < maxCopySteps; steps++ {
		from := queue[0]
		queue = queue[1:]
		for _, st := range l.streams {
			for _, src := range st.sources {
				if src.stream != from.stream {
					continue
				}
				as, ok := src.copies(from.subject)
				if !ok {
					continue
				}
				if as != "" {
					as = storesAs(st.transform, as) // the copying stream's own transform applies to what it copies
				}
				since := later(from.since, st.window.Created)
				path := append(slices.Clip(from.path), replaypolicy.CopyHop{Stream: st.window.Stream, Subject: as, Mirror: src.mirror})
				if !src.mirror {
					out = append(out, replaypolicy.Copy{Stream: st.window.Stream, Duplicates: st.window.Duplicates, Since: since, Path: path})
				}
				// A stream reached again by a path of later creation
				// copies later: followed again (steps bound it).
				next := at{st.window.Stream, as}
				if prev, ok := seen[next]; as != "" && (!ok || since.After(prev)) {
					seen[next] = since
					queue = append(queue, visit{next, since, path})
				}
			}
		}
	}
	return latestCopies(out)
}

// latestCopies is cs without the copies another holds an id at least as
// long as, whatever the time it copied it (it began to copy no earlier,
// and its window is no shorter); of equal ones, the first.
func latestCopies(cs []replaypolicy.Copy) []replaypolicy.Copy {
	var out []replaypolicy.Copy
	for i, c := range cs {
		covered := slices.ContainsFunc(cs, func(d replaypolicy.Copy) bool {
			return d.Duplicates >= c.Duplicates && !d.Since.Before(c.Since) && (d.Duplicates > c.Duplicates || d.Since.After(c.Since))
		})
		if !covered && !slices.ContainsFunc(cs[:i], func(d replaypolicy.Copy) bool { return d.Duplicates == c.Duplicates && d.Since.Equal(c.Since) }) {
			out = append(out, c)
		}
	}
	return out
}

// LateCopies implements WindowReader. A late copy (Copy.Late) is read
// from the broker: the last message of the subject in each stream of its
// Path (one direct read each; a stream's answer serves every copy and job
// of the claim for lateCopyReadFor). It has copied the target's message
// when every stream of its Path has copied the latest message of the
// stream before it, or the one before has none (copiedUpTo); then it
// copied the original no later than it stored its own latest (Copied).
// One that has not is Behind. None having a message of the subject:
// nothing is held. A copy whose subject could not be worked out (a
// transform built elsewhere) cannot be read: Behind, with why.
func (s *StreamWindows) LateCopies(ctx context.Context, a replaypolicy.Attempt) replaypolicy.Window {
	w := a.Window
	w.Copies = slices.Clone(w.Copies)
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	for i, c := range w.Copies {
		if !c.Late(a.StoredBy, a.Margin) {
			continue
		}
		if slices.ContainsFunc(c.Path, func(h replaypolicy.CopyHop) bool { return h.Subject == "" }) {
			w.Copies[i].Behind = "the subject it stores the original as comes from a subject transform the console cannot follow, so when it copied it cannot be read: " +
				"replay the item by hand once that stream holds the original, or cancel"
			continue
		}
		var before *jetstream.RawStreamMsg
		for j, h := range c.Path {
			m, err := s.lastOf(ctx, h.Stream, h.Subject)
			switch {
			case err != nil:
				w.Unreadable = "when a stream made since the original copied it: " + err.Error()
				return w
			case j > 0 && before != nil && m == nil:
				w.Copies[i].Behind = fmt.Sprintf("stream %s has not copied any message of %q from stream %s yet", h.Stream, c.Path[j-1].Subject, c.Path[j-1].Stream)
			case j > 0 && before != nil && !copiedUpTo(m, h, c.Path[j-1].Stream, before):
				w.Copies[i].Behind = fmt.Sprintf("stream %s has not yet copied stream %s's latest message of %q (sequence %d)", h.Stream, c.Path[j-1].Stream, c.Path[j-1].Subject, before.Sequence)
			}
			if w.Copies[i].Behind != "" {
				break
			}
			before = m
		}
		switch {
		case w.Copies[i].Behind != "":
		case before == nil:
			w.Copies[i].Copied = c.Since // it holds no message of the subject: nothing is held from later than its creation
		default:
			w.Copies[i].Copied = before.Time
		}
	}
	return w
}

// lateCopyReadFor is how long a read of a stream's last message of a
// subject serves LateCopies: a bulk replay judges thousands of jobs of one
// subject, and a copy that is behind is read again at each deferral.
const lateCopyReadFor = time.Second

// lastRead is a stream's last message of a subject as read at (nil: it
// has none).
type lastRead struct {
	msg *jetstream.RawStreamMsg
	at  time.Time
}

// lastOf is stream's last message of subject (nil when it has none), read
// at most lateCopyReadFor ago.
func (s *StreamWindows) lastOf(ctx context.Context, stream, subject string) (*jetstream.RawStreamMsg, error) {
	key := stream + " " + subject
	s.mu.Lock()
	r, ok := s.lasts[key]
	s.mu.Unlock()
	if ok && time.Since(r.at) < lateCopyReadFor {
		return r.msg, nil
	}
	at := time.Now()
	st, err := s.js.Stream(ctx, stream)
	if err != nil {
		return nil, fmt.Errorf("read stream %s: %w", stream, err)
	}
	m, err := st.GetLastMsgForSubject(ctx, subject)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		m = nil
	case err != nil:
		return nil, fmt.Errorf("read the last message of %q in stream %s: %w", subject, stream, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lasts == nil || len(s.lasts) >= maxCachedWindows {
		s.lasts = map[string]lastRead{}
	}
	s.lasts[key] = lastRead{msg: m, at: at}
	return m, nil
}

// copiedUpTo says whether m, the last message of a subject in the stream
// of hop h, shows it copied latest (the last one of the stream before,
// named from) or one after: a mirror keeps the sequences it copies; a
// stream that sources names the sequence it copied in its
// Nats-Stream-Source header, when that names from; else by the stored
// times (a copy is stored after what it copies).
func copiedUpTo(m *jetstream.RawStreamMsg, h replaypolicy.CopyHop, from string, latest *jetstream.RawStreamMsg) bool {
	if h.Mirror {
		return m.Sequence >= latest.Sequence
	}
	fields := strings.Fields(m.Header.Get("Nats-Stream-Source"))
	if len(fields) >= 2 && strings.SplitN(fields[0], ":", 2)[0] == from {
		if seq, err := strconv.ParseUint(fields[1], 10, 64); err == nil {
			return seq >= latest.Sequence
		}
	}
	return !m.Time.Before(latest.Time)
}
