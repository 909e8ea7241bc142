package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarantine-console/quarantine/replaypolicy"
)

// A copy made after the original (replaypolicy.Copy.Late) copies it when
// it catches up with what it copies, at a time only the broker tells: a
// worker reads, before a first attempt goes, that every stream of the
// copy's Path holds the original, and by when (LateCopies). Two things
// show a stream of the Path to hold it, each read no earlier than the
// stream before it was shown to:
//
//   - its last message of the subject was copied from a message of the
//     stream before it at or after that stream's latest one of the subject
//     as first read (the sequence its Nats-Stream-Source header names; a
//     mirror keeps the sequences): it stored the original no later than
//     that message;
//   - else (its last message came from another source, or it holds none:
//     aged out, consumed, or never copied) its source entry for the stream
//     before it, in its StreamInfo: no error, heard from within
//     linkHeardWithin, nothing left to copy (Lag 0), on two reads, the
//     second having heard from it after the first (Lag is counted as the
//     consumer's pending less one, so a 0 may leave one message to copy):
//     it held the original by that second read.
//
// Each read only moves those times later, so StreamWindows keeps the
// earliest any read showed, by message id and copy (lateReads): a busy
// subject, whose latest message is always newer than the copy's window,
// never makes it wait for ever, and a worker that restarts only reads
// again (later, so still safe).

// LateCopies implements WindowReader: each late copy of a's window read
// along its Path (Copy.Copied, or Copy.Behind with why and since when). A
// stream's last message of a subject and its StreamInfo are read once
// for every copy and job of a claim for lateCopyReadFor. A copy whose
// subject could not be worked out (a transform built elsewhere) cannot
// be read: Behind, with why.
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
		r, err := s.readLate(ctx, a.MsgID, c.Path, c.Duplicates)
		if err != nil {
			w.Unreadable = "when a stream made since the original copied it: " + err.Error()
			return w
		}
		w.Copies[i].Copied, w.Copies[i].Behind, w.Copies[i].BehindSince = r.copied, r.behind, r.behindSince
	}
	return w
}

// lateRead is what the reads of one late copy showed for one message id:
// by hop of its Path (the first, the target, unused), and since when it
// has been behind.
type lateRead struct {
	hops        []hopRead
	behindSince time.Time
	// What the last read found: when the copy held the original by
	// (zero: not shown), else why not.
	copied time.Time
	behind string
	// keep is until when a judgement may still need these reads: the
	// copy's window past when it held the original (or past the read
	// that showed it), or the next read of a copy behind, and
	// lateReadSlack after.
	keep time.Time
}

// hopRead is what the reads showed of one stream of a copy's Path.
type hopRead struct {
	// created is when the stream the reads were of was created: the
	// stream of its name read now, created at another time, is another
	// (deleted and made again), and the reads start again from it.
	created time.Time
	// need is the sequence of the latest message of the subject in the
	// stream before, as first read once that stream held the original
	// (0: not read yet): a message copied from it or a later one shows
	// this stream holds the original.
	need uint64
	// held is when the read that first showed this stream to hold the
	// original ended, by the worker's clock (zero: none yet); copied is
	// when it stored it at the latest (the stored time of the message
	// that showed it, or held); readAt is when that read began: its last
	// message of the subject, or a later read's, is at or after its copy
	// of the original (it was read after the message, or the link, that
	// showed it holds it).
	held, copied, readAt time.Time
	// linkAt is when a read that found its source entry caught up ended,
	// waiting for a read that hears from the link after it (zero: the
	// last read did not find it caught up).
	linkAt time.Time
}

// StreamWindows remembers the reads of late copies (lateReads) while a
// judgement may need them (lateRead.keep): one forgotten is read again
// from the start, which shows a later time (a busy subject's latest
// message, a source entry read now), and its item waits a window more;
// forgotten again before that wait is over, it would never go. So reads
// are not forgotten by count while they may be needed: once
// maxLateReads are kept, those no longer needed go, and the next such
// sweep comes when twice as many as are left are kept. Only past
// maxKeptLateReads (items in flight with late copies) do all go at once.
const (
	maxLateReads     = 10_000
	maxKeptLateReads = 200_000
	lateReadSlack    = 10 * time.Minute
)

// readLate reads the late copy of path for message id msgID, from where
// the reads before left it (lateReads), and keeps what it found.
func (s *StreamWindows) readLate(ctx context.Context, msgID string, path []replaypolicy.CopyHop, window time.Duration) (lateRead, error) {
	key := msgID + "\x00" + pathKey(path)
	s.mu.Lock()
	r := s.lates[key]
	s.mu.Unlock()
	r.hops = slices.Clone(r.hops)
	if len(r.hops) != len(path) {
		r = lateRead{hops: make([]hopRead, len(path))}
	}
	r.copied, r.behind = time.Time{}, ""
	for k := 1; k < len(path) && r.behind == ""; k++ {
		// Which stream of the name this is: one deleted and made again
		// since is another stream, which has copied nothing the reads
		// of the old one showed (nor has any stream after it on the
		// path copied the original through it).
		cur, err := s.readStream(ctx, path[k].Stream, path[k].Subject)
		if err != nil {
			return r, err
		}
		if created := cur.info.Created; !r.hops[k].created.Equal(created) {
			clear(r.hops[k:])
			r.hops[k].created = created
		}
		if !r.hops[k].held.IsZero() {
			continue // shown before: a later read shows no earlier time
		}
		why, err := s.readHop(ctx, path, k, r.hops[k-1], &r.hops[k])
		if err != nil {
			return r, err
		}
		r.behind = why
	}
	now := time.Now()
	switch {
	case r.behind == "":
		r.copied, r.behindSince = r.hops[len(path)-1].copied, time.Time{}
		r.keep = later(r.copied.Add(window), now).Add(lateReadSlack)
	case r.behindSince.IsZero():
		r.behindSince = now
		fallthrough
	default:
		r.keep = now.Add(replaypolicy.MaxBehindRecheck + lateReadSlack)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keepLate(key, r, now)
	return r, nil
}

// keepLate keeps r as key's reads (mu held), first letting go of those
// no judgement needs any more (lateRead.keep before now) when
// maxLateReads, or twice as many as the last sweep left, are kept
// (maxKeptLateReads: all).
func (s *StreamWindows) keepLate(key string, r lateRead, now time.Time) {
	if s.lates == nil {
		s.lates = map[string]lateRead{}
	}
	if len(s.lates) >= max(s.lateSweepAt, maxLateReads) {
		maps.DeleteFunc(s.lates, func(_ string, l lateRead) bool { return l.keep.Before(now) })
		if len(s.lates) >= maxKeptLateReads {
			clear(s.lates)
		}
		s.lateSweepAt = 2 * len(s.lates)
	}
	s.lates[key] = r
}

// bounded is m to add to, or a new map when m is nil or holds limit
// entries: a cache that starts again rather than grow.
func bounded[V any](m map[string]V, limit int) map[string]V {
	if m == nil || len(m) >= limit {
		return map[string]V{}
	}
	return m
}

// pathKey names a copy's Path in lateReads.
func pathKey(path []replaypolicy.CopyHop) string {
	var b strings.Builder
	for _, h := range path {
		fmt.Fprintf(&b, "%s %s %t\x00", h.Stream, h.Subject, h.Mirror)
	}
	return b.String()
}

// readHop reads whether the stream of path[k] holds the original, the
// stream before it having been shown to as before says (zero: the
// target, which held it before any read), into h; "" when it does, else
// why not.
func (s *StreamWindows) readHop(ctx context.Context, path []replaypolicy.CopyHop, k int, before hopRead, h *hopRead) (string, error) {
	prev, hop := path[k-1], path[k]
	prevHeld := before.held
	from, err := s.readStream(ctx, prev.Stream, prev.Subject)
	if err != nil {
		return "", err
	}
	if h.need == 0 && from.last != nil && !from.before.Before(before.readAt) {
		h.need = from.last.Sequence
	}
	cp, err := s.readStream(ctx, hop.Stream, hop.Subject)
	if err != nil {
		return "", err
	}
	if h.need != 0 && cp.last != nil && copiedFrom(cp.last, hop, prev.Stream) >= h.need {
		h.held, h.copied, h.readAt = cp.after, cp.last.Time, cp.before
		return "", nil
	}
	// What its messages show, and its link to the stream before then says.
	var shows string
	switch n := copiedFrom(cp.last, hop, prev.Stream); {
	case cp.last == nil && from.last == nil:
		shows = fmt.Sprintf("stream %s has not been shown to have copied stream %s's message of %q (neither holds one now)", hop.Stream, prev.Stream, prev.Subject)
	case cp.last == nil:
		shows = fmt.Sprintf("stream %s has not copied any message of %q from stream %s yet", hop.Stream, prev.Subject, prev.Stream)
	case n > 0 && h.need != 0:
		shows = fmt.Sprintf("stream %s has not yet copied stream %s's latest message of %q (sequence %d)", hop.Stream, prev.Stream, prev.Subject, h.need)
	case n > 0:
		shows = fmt.Sprintf("stream %s has not been shown to have copied stream %s's message of %q yet", hop.Stream, prev.Stream, prev.Subject)
	default:
		shows = fmt.Sprintf("stream %s has not been shown to have copied stream %s's latest message of %q (its own latest one came from another source)", hop.Stream, prev.Stream, prev.Subject)
	}
	link, heard := linkOf(cp.info, cp.before, prev.Stream, hop.Mirror)
	switch {
	case link != "":
		h.linkAt = time.Time{}
		return shows + ", and " + link, nil
	case h.linkAt.IsZero() || !heard.After(h.linkAt) || !heard.After(prevHeld):
		// Caught up as its link says, which may leave one message out:
		// a read that hears from it after this one tells.
		if h.linkAt.IsZero() {
			h.linkAt = cp.after
		}
		return fmt.Sprintf("%s; its link to stream %s says it has copied all of it, which the next read confirms (the link's count of what is left to copy can be one short)",
			shows, prev.Stream), nil
	}
	h.held, h.copied, h.readAt, h.linkAt = cp.after, cp.after, cp.before, time.Time{}
	return "", nil
}

// copiedFrom is the sequence in stream from of the message m copied, m
// being the last message of a subject in the stream of hop (0: not
// copied from from, or m nil): a mirror keeps the sequences it copies; a
// stream that sources names the one it copied in its Nats-Stream-Source
// header ("<stream>[:<id>] <seq> ...").
func copiedFrom(m *jetstream.RawStreamMsg, hop replaypolicy.CopyHop, from string) uint64 {
	switch {
	case m == nil:
		return 0
	case hop.Mirror:
		return m.Sequence
	}
	fields := strings.Fields(m.Header.Get("Nats-Stream-Source"))
	if len(fields) < 2 || strings.SplitN(fields[0], ":", 2)[0] != from {
		return 0
	}
	seq, err := strconv.ParseUint(fields[1], 10, 64)
	if err != nil {
		return 0
	}
	return seq
}

// linkHeardWithin is how recently a source link must have been heard from
// to say it is caught up: the broker's source consumers send a heartbeat
// each second when idle.
const linkHeardWithin = 5 * time.Second

// linkOf says why info's stream is not caught up with stream from ("":
// it is), by its source entries for from (its mirror entry when mirror):
// an error, not heard from within linkHeardWithin, messages left to copy.
// heard is when, at the earliest, it was last heard from, info having
// been asked for at (by the worker's clock: the broker's "heard from"
// is counted back from it, which says it no later).
func linkOf(info *jetstream.StreamInfo, at time.Time, from string, mirror bool) (why string, heard time.Time) {
	var links []*jetstream.StreamSourceInfo
	if mirror {
		if info.Mirror != nil && info.Mirror.Name == from {
			links = append(links, info.Mirror)
		}
	} else {
		for _, l := range info.Sources {
			if l != nil && l.Name == from {
				links = append(links, l)
			}
		}
	}
	if len(links) == 0 {
		return fmt.Sprintf("it no longer copies stream %s", from), time.Time{}
	}
	heard = at
	for _, l := range links {
		switch {
		case l.Error != nil:
			return fmt.Sprintf("its link to stream %s reports an error (%s)", from, l.Error.Description), time.Time{}
		case l.Active < 0:
			return fmt.Sprintf("its link to stream %s has not been heard from yet", from), time.Time{}
		case l.Active > linkHeardWithin:
			return fmt.Sprintf("its link to stream %s has not been heard from for over %s", from, linkHeardWithin), time.Time{}
		case l.Lag > 0:
			// Not how many: the reason is what a deferral's audit row
			// says, and a new one is written only when it changes
			// (job.deferredAgain); a count that falls at each re-check
			// of a copy catching up would write one at every re-check.
			return fmt.Sprintf("its link to stream %s has messages left to copy", from), time.Time{}
		}
		heard = earlier(heard, at.Add(-l.Active))
	}
	return "", heard
}

// earlier is the earlier of a and b.
func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// lateCopyReadFor is how long a read of a stream (its last message of a
// subject and its info) serves LateCopies: a bulk replay judges thousands
// of jobs of one subject.
const lateCopyReadFor = time.Second

// streamRead is a stream's info and its last message of a subject (nil:
// it has none), read between before and after by the worker's clock.
type streamRead struct {
	info          *jetstream.StreamInfo
	last          *jetstream.RawStreamMsg
	before, after time.Time
}

// readStream is stream's info and its last message of subject, read at
// most lateCopyReadFor ago.
func (s *StreamWindows) readStream(ctx context.Context, stream, subject string) (streamRead, error) {
	key := stream + " " + subject
	s.mu.Lock()
	r, ok := s.reads[key]
	s.mu.Unlock()
	if ok && time.Since(r.before) < lateCopyReadFor {
		return r, nil
	}
	r = streamRead{before: time.Now()}
	st, err := s.js.Stream(ctx, stream)
	if err != nil {
		return r, fmt.Errorf("read stream %s: %w", stream, err)
	}
	r.info = st.CachedInfo()
	if r.last, err = s.lastMsg(ctx, stream, subject); err != nil {
		return r, err
	}
	r.after = time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads = bounded(s.reads, maxCachedWindows)
	s.reads[key] = r
	return r, nil
}

// lastMsg is stream's last message of subject (nil when it has none),
// asked of the stream itself ($JS.API.STREAM.MSG.GET), never by a direct
// get: a mirror that allows direct gets answers those for the stream it
// mirrors, from what it has copied so far, and an older "latest" would
// let a copy look caught up before it is.
func (s *StreamWindows) lastMsg(ctx context.Context, stream, subject string) (*jetstream.RawStreamMsg, error) {
	req, err := json.Marshal(struct {
		LastFor string `json:"last_by_subj"`
	}{subject})
	if err != nil {
		return nil, err
	}
	resp, err := s.js.Conn().RequestWithContext(ctx, apiPrefix(s.js.Options())+"STREAM.MSG.GET."+stream, req)
	if err != nil {
		return nil, fmt.Errorf("read the last message of %q in stream %s: %w", subject, stream, err)
	}
	var got struct {
		Error *jetstream.APIError `json:"error"`
		Msg   *struct {
			Subject string    `json:"subject"`
			Seq     uint64    `json:"seq"`
			Header  []byte    `json:"hdrs"`
			Time    time.Time `json:"time"`
		} `json:"message"`
	}
	if err := json.Unmarshal(resp.Data, &got); err != nil {
		return nil, fmt.Errorf("read the last message of %q in stream %s: %w", subject, stream, err)
	}
	switch {
	case got.Error != nil && got.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return nil, nil
	case got.Error != nil:
		return nil, fmt.Errorf("read the last message of %q in stream %s: %w", subject, stream, got.Error)
	case got.Msg == nil:
		return nil, fmt.Errorf("read the last message of %q in stream %s: %w", subject, stream, jetstream.ErrInvalidJetStreamResponse)
	}
	m := &jetstream.RawStreamMsg{Subject: got.Msg.Subject, Sequence: got.Msg.Seq, Time: got.Msg.Time}
	if len(got.Msg.Header) > 0 {
		if m.Header, err = nats.DecodeHeadersMsg(got.Msg.Header); err != nil {
			return nil, fmt.Errorf("read the last message of %q in stream %s: its headers: %w", subject, stream, err)
		}
	}
	return m, nil
}

// apiPrefix is the JetStream API prefix o's requests go to.
func apiPrefix(o jetstream.JetStreamOptions) string {
	switch {
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	case o.APIPrefix != "":
		return strings.TrimSuffix(o.APIPrefix, ".") + "."
	}
	return jetstream.DefaultAPIPrefix
}
