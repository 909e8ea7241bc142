package dlq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// handleAdvisory fetches the message an advisory points at and queues the
// record. The advisory must name a watched stream, the one its subject
// names: otherwise anyone who may publish on an advisory subject could make
// the console copy messages of any stream it can read. When the fetch fails
// for a reason other than "gone", the advisory is delivered again later (at
// most maxHeaderRereads times; then the record is stored without the
// original, flagged). When its consumer was made again meanwhile it cannot
// be nak'd: the one made again delivers it again, unless it is no longer
// in its stream, when it is stored now, flagged.
func (in *Ingester) handleAdvisory(ctx context.Context, m jetstream.Msg, items chan<- item) {
	rec, adv, err := in.advisoryRecord(ctx, in.received(m), m.Subject(), m.Data())
	if err != nil {
		if md, mdErr := m.Metadata(); mdErr == nil && md.NumDelivered < maxHeaderRereads {
			// Not nak'd when its consumer was made again: the
			// consumer made again delivers it again while its stream
			// holds it (and the original may be readable then); only
			// one no longer there is stored now, flagged, rather than
			// nak'd for nobody.
			nakErr := m.NakWithDelay(2 * time.Second)
			if !errors.Is(nakErr, errRetired) {
				in.log.Warn("fetch original for advisory; will retry", "stream", adv.Stream, "seq", adv.StreamSeq, "err", err)
				return
			}
			if in.comesAgain(ctx, md) {
				in.log.Warn("fetch original for advisory failed and its consumer was made again: it comes again from the one made again",
					"stream", adv.Stream, "seq", adv.StreamSeq, "err", err)
				return
			}
		}
	}
	in.enqueue(ctx, items, item{msg: m, rec: &rec})
}

// advisoryRecord makes the record of a captured advisory: via is its
// message as received from the advisory stream, subject the one it came
// on, data its JSON. One that cannot be read, or names a stream it may not
// (checkAdvisoryStream), is kept as it came (unreadableAdvisory). err is
// why the original could not be read, for a reason other than its being
// gone: the record is then flagged original_unreadable, and the caller may
// rather try again later (handleAdvisory, the sweep).
func (in *Ingester) advisoryRecord(ctx context.Context, via Received, subject string, data []byte) (rec Record, adv Advisory, err error) {
	adv, err = parseAdvisoryJSON(data)
	if err == nil {
		err = in.checkAdvisoryStream(subject, adv)
	}
	if err != nil {
		return unreadableAdvisory(via, err), adv, nil
	}
	orig, err := in.fetchOriginal(ctx, adv)
	rec = ParseAdvisory(in.watchFor(adv.Stream), adv, orig, data, via)
	if err != nil {
		rec.flag("original_unreadable", "the original message could not be read from its stream: %v", err)
	}
	return rec, adv, err
}

// comesAgain says whether the message md describes is still in its
// stream, so that a consumer made again delivers it again: yes when the
// stream holds it (stored at the same time), and when that cannot be read
// (the consumer made again delivers all the stream holds); no when the
// stream or the message is gone, or another message holds its sequence.
func (in *Ingester) comesAgain(ctx context.Context, md *jetstream.MsgMetadata) bool {
	st, err := readStored(ctx, in.js, md.Stream, md.Sequence.Stream, false)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound), errors.Is(err, jetstream.ErrStreamNotFound):
		return false
	case err != nil:
		return true
	}
	return st.Time.Equal(md.Timestamp)
}

// checkAdvisoryStream reports why adv may not be followed: its stream is
// not one of the watched ones, or not the one in the subject it came on.
func (in *Ingester) checkAdvisoryStream(subject string, adv Advisory) error {
	var onSubject string
	for _, p := range []string{AdvisoryMaxDeliveries + ".", AdvisoryTerminated + "."} {
		if rest, ok := strings.CutPrefix(subject, p); ok {
			onSubject, _, _ = strings.Cut(rest, ".")
		}
	}
	if adv.Stream != onSubject {
		return fmt.Errorf("advisory names stream %s but came on subject %s", short(adv.Stream), short(subject))
	}
	if !slices.ContainsFunc(in.cfg.Watch, func(w WatchStream) bool { return w.Name == adv.Stream }) {
		return fmt.Errorf("advisory names stream %s, which is not watched", short(adv.Stream))
	}
	return nil
}

func (in *Ingester) watchFor(stream string) WatchStream {
	for _, w := range in.cfg.Watch {
		if w.Name == stream {
			return w
		}
	}
	ws, _ := ParseWatchStreams(stream) // a stream name alone always parses
	return ws[0]
}

// fetchOriginal returns the message an advisory points at, its header
// block exactly as stored (a block the NATS client cannot read must not
// stop the capture); nil when it is gone.
func (in *Ingester) fetchOriginal(ctx context.Context, adv Advisory) (*Original, error) {
	st, err := readStored(ctx, in.js, adv.Stream, adv.StreamSeq, false)
	if errors.Is(err, jetstream.ErrMsgNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	block := st.Header
	if block == nil {
		block = []byte{}
	}
	return &Original{Subject: st.Subject, HeaderBlock: block, Data: st.Data, Time: st.Time}, nil
}
