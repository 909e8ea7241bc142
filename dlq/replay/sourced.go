package replay

import (
	"slices"
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
// copies it then, with a fresh time) and its Path, but those another
// copies the target through with a window no shorter (latestCopies).
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

// latestCopies is cs without the copies another copies the target
// through, with a window at least as long (its Path passes through
// theirs): it copies the target's message after they do and holds its id
// no shorter, and a read of it reads every stream of its Path
// (LateCopies). Another copy, a sibling made later with a longer window
// say, is kept: a late one is read on its own, and it may copy the
// original later than the others (a link that is down). Of copies of one
// Path, the first.
func latestCopies(cs []replaypolicy.Copy) []replaypolicy.Copy {
	var out []replaypolicy.Copy
	for i, c := range cs {
		covered := slices.ContainsFunc(cs, func(d replaypolicy.Copy) bool {
			return d.Duplicates >= c.Duplicates && len(d.Path) > len(c.Path) && slices.Equal(d.Path[:len(c.Path)], c.Path)
		})
		if !covered && !slices.ContainsFunc(cs[:i], func(d replaypolicy.Copy) bool { return slices.Equal(d.Path, c.Path) }) {
			out = append(out, c)
		}
	}
	return out
}
