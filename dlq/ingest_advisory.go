package dlq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
)

// handleAdvisory fetches the message an advisory points at and queues the
// record. The advisory must name a watched stream, the one its subject
// names: otherwise anyone who may publish on an advisory subject could make
// the console copy messages of any stream it can read. When the fetch fails
// for a reason other than "gone", the advisory is delivered again later (at
// most maxHeaderRereads times, or maxWideDeliveries more while NATS itself
// does not answer the read; then the record is stored without the
// original, flagged). When its consumer was made again meanwhile it cannot
// be nak'd: the one made again delivers it again, unless it is no longer
// in its stream, when it is stored now, flagged.
//
// One of a stream this replica does not watch is first judged by the
// streams the other replicas watch (notOurs).
func (in *Ingester) handleAdvisory(ctx context.Context, m jetstream.Msg, items chan<- item) {
	if in.notOurs(ctx, m) {
		return
	}
	rec, adv, err := in.advisoryRecord(ctx, in.received(m), m.Subject(), m.Data())
	if err != nil {
		if md, mdErr := m.Metadata(); mdErr == nil && (md.NumDelivered < maxHeaderRereads || waitsOutWide(err, md)) {
			// Not nak'd when its consumer was made again: the
			// consumer made again delivers it again while its stream
			// holds it (and the original may be readable then); only
			// one no longer there is stored now, flagged, rather than
			// nak'd for nobody.
			nakErr := m.NakWithDelay(rereadDelay(md.NumDelivered))
			if !errors.Is(nakErr, errRetired) {
				in.log.Warn("fetch original for advisory; will retry", "stream", adv.Stream, "seq", adv.StreamSeq, "deliveries", md.NumDelivered, "err", err)
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
// gone: the record is then flagged original_unreadable, not original_gone
// (parseAdvisory), and the caller may rather try again later
// (handleAdvisory, the sweep).
func (in *Ingester) advisoryRecord(ctx context.Context, via Received, subject string, data []byte) (rec Record, adv Advisory, err error) {
	adv, err = parseAdvisoryJSON(data)
	if err == nil {
		err = in.checkAdvisoryStream(subject, adv)
	}
	if err != nil {
		return unreadableAdvisory(via, err), adv, nil
	}
	orig, err := in.fetchOriginal(ctx, adv)
	rec = parseAdvisory(in.watchFor(adv.Stream), adv, orig, err, data, via)
	var taken *Original
	if rec.OriginalSubject != "" { // the original was taken (not gone, not replaced)
		taken = orig
	}
	if why, impossible, cerr := in.checkAdvisoryConsumer(ctx, subject, adv, taken); why != "" {
		rec.unverifiedAdvisory(why, impossible)
		if err == nil {
			err = cerr // read again later, as for an original not read
		}
	} else if in.cfg.UntrustedAdvisories && taken != nil {
		rec.unverifiedAdvisory(untrustedAdvisories, false)
	}
	return rec, adv, err
}

// untrustedAdvisories is why a give-up that passed checkAdvisoryConsumer
// is flagged all the same on a console whose advisories are not trusted
// (IngestConfig.UntrustedAdvisories).
const untrustedAdvisories = "advisory give-ups are not trusted on this console (DLQ_ADVISORIES_TRUSTED is not set): where clients may publish on $JS.EVENT.ADVISORY.>, " +
	"a forged give-up naming a consumer that delivered (and acked) the message cannot be told from a real one; deny that publish to every client and set DLQ_ADVISORIES_TRUSTED=true"

// checkAdvisoryConsumer says why the give-up adv reports cannot be shown
// to have happened ("" when it can): the consumer it names (that of the
// subject it came on) must be one the stream has, and have delivered the
// message: its delivered stream sequence at least the message's, the
// message not before where the consumer starts (a consumer by start
// sequence never delivers one below it; one by start time, one stored
// before it; one that delivers new messages only, one stored before it
// was made), and the original's subject one its filter subjects take (a
// consumer filtered to one tenant never delivers another's message,
// whatever its delivered sequence); and it must be one that gives up at
// all: a consumer that acks nothing (ack policy none) is never
// redelivered to and cannot terminate a message, and one with no
// MaxDeliver (-1, the default) never reaches it. orig is the original as
// taken (nil: not read, gone or replaced), whose subject and stored time
// are then not checked. The JSON and the subject are written by whoever
// may publish on an advisory subject; without this, one naming a consumer
// that never existed, or one that cannot have given the message up, turns
// any message of a watched stream, any tenant's, into a dead letter an
// operator may replay.
//
// impossible says the advisory cannot be a real one: the consumer exists
// and cannot have delivered the message or given it up (JetStream never
// changes a consumer's ack policy, deliver policy or start), or the JSON's
// consumer is not the subject's. Otherwise it could not be checked: a
// consumer deleted since (nats.go's Subscribe deletes the one it made on
// Unsubscribe; an ephemeral expires) cannot be told from one that never
// existed, and a MaxDeliver taken off since a real give-up (nats consumer
// edit) from one that never had it. A MaxDeliver other than the
// advisory's deliveries is not held against it: it may have been edited
// either way since. Either way the row is flagged (never dropped). err is
// set when the consumer could not be read (NATS): the caller may rather
// try again later.
//
// A consumer that starts at the last message (or the last of each
// subject) delivers one message stored before it was made, or one a
// subject: which one is not in its configuration, so its start is not
// checked (TestRevIngest20ForgedGiveUpBeforeDeliverNewConsumer checks the
// new-only one).
//
// The start time, and a new-only consumer's creation, are compared with
// the original's stored time, which is how JetStream finds the sequence
// such a consumer starts at. A stream
// whose server's clock was set back holds later messages stored at
// earlier times, which a consumer by start time delivers all the same: a
// real give-up of one of those is flagged too (stored for inspection,
// never replayed; re-publish it from the producer).
func (in *Ingester) checkAdvisoryConsumer(ctx context.Context, subject string, adv Advisory, orig *Original) (why string, impossible bool, err error) {
	var onSubject string
	for _, p := range []string{AdvisoryMaxDeliveries + ".", AdvisoryTerminated + "."} {
		if rest, ok := strings.CutPrefix(subject, p+adv.Stream+"."); ok {
			onSubject = rest
		}
	}
	if adv.Consumer != onSubject {
		return fmt.Sprintf("not a real give-up: the advisory names consumer %s but came on subject %s", short(adv.Consumer), short(subject)), true, nil
	}
	info, err := in.anyConsumerInfo(ctx, adv.Stream, adv.Consumer)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound), errors.Is(err, jetstream.ErrInvalidConsumerName), errors.Is(err, jetstream.ErrStreamNotFound):
		return fmt.Sprintf("consumer gone: cannot be checked: stream %s has no consumer %s (it never had one, or it was deleted since)",
			short(adv.Stream), short(adv.Consumer)), false, nil
	case err != nil:
		return fmt.Sprintf("consumer unreadable: cannot be checked: consumer %s of stream %s could not be read: %v", short(adv.Consumer), short(adv.Stream), err), false, err
	}
	c, name := info.Config, fmt.Sprintf("consumer %s of stream %s", short(adv.Consumer), short(adv.Stream))
	switch {
	case info.Delivered.Stream < adv.StreamSeq:
		return fmt.Sprintf("consumer exists but cannot have delivered it: %s has delivered up to stream sequence %d only, not %d "+
			"(it was made again since, or never delivered it)", name, info.Delivered.Stream, adv.StreamSeq), true, nil
	case c.DeliverPolicy == jetstream.DeliverByStartSequencePolicy && adv.StreamSeq < c.OptStartSeq:
		return fmt.Sprintf("consumer exists but cannot have delivered it: %s starts at stream sequence %d, after %d", name, c.OptStartSeq, adv.StreamSeq), true, nil
	case c.DeliverPolicy == jetstream.DeliverByStartTimePolicy && c.OptStartTime != nil && orig != nil && !orig.Time.IsZero() && orig.Time.Before(*c.OptStartTime):
		return fmt.Sprintf("consumer exists but cannot have delivered it: %s starts at messages stored from %s, and the message was stored at %s", name,
			c.OptStartTime.UTC().Format(time.RFC3339Nano), orig.Time.UTC().Format(time.RFC3339Nano)), true, nil
	case c.DeliverPolicy == jetstream.DeliverNewPolicy && orig != nil && !orig.Time.IsZero() && !info.Created.IsZero() && orig.Time.Before(info.Created):
		return fmt.Sprintf("consumer exists but cannot have delivered it: %s delivers only messages stored after it was made (%s), and the message was stored at %s", name,
			info.Created.UTC().Format(time.RFC3339Nano), orig.Time.UTC().Format(time.RFC3339Nano)), true, nil
	case orig != nil && !filterTakes(c, orig.Subject):
		return fmt.Sprintf("consumer exists but cannot have delivered it: %s is filtered to %s, which does not take the message's subject %s",
			name, short(strings.Join(filterSubjects(c), ", ")), short(orig.Subject)), true, nil
	case c.AckPolicy == jetstream.AckNonePolicy:
		return fmt.Sprintf("consumer exists but cannot have given it up: %s acks nothing (ack policy none): it is never redelivered to and cannot terminate a message", name), true, nil
	case !adv.Terminated() && c.MaxDeliver <= 0:
		return fmt.Sprintf("consumer has no MaxDeliver: cannot be checked: %s has no MaxDeliver (%d), so JetStream never gives up on a message for it "+
			"(it was taken off since the give-up, or the advisory is forged)", name, c.MaxDeliver), false, nil
	}
	return "", false, nil
}

// filterSubjects are a consumer's filter subjects (none: it takes every
// subject of its stream).
func filterSubjects(c jetstream.ConsumerConfig) []string {
	fs := slices.Clone(c.FilterSubjects)
	if c.FilterSubject != "" {
		fs = append(fs, c.FilterSubject)
	}
	return fs
}

// filterTakes says whether a consumer of config c delivers messages of
// subject, by the NATS subject-matching rules (nats-server's own).
func filterTakes(c jetstream.ConsumerConfig, subject string) bool {
	fs := filterSubjects(c)
	return len(fs) == 0 || slices.ContainsFunc(fs, func(f string) bool { return server.SubjectMatchesFilter(subject, f) })
}

// anyConsumerInfo reads a consumer's info, pull or push.
func (in *Ingester) anyConsumerInfo(ctx context.Context, stream, name string) (*jetstream.ConsumerInfo, error) {
	c, err := in.js.Consumer(ctx, stream, name)
	if errors.Is(err, jetstream.ErrNotPullConsumer) {
		p, perr := in.js.PushConsumer(ctx, stream, name)
		if perr != nil {
			return nil, perr
		}
		return p.CachedInfo(), nil
	}
	if err != nil {
		return nil, err
	}
	return c.CachedInfo(), nil
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
// stop the capture), or, for a message too large for JetStream's JSON API
// whose block the client reads whole, its headers as read (readStored);
// nil when it is gone. err is a read that failed otherwise (NATS did not
// answer, the connection, a message larger than the connection takes, a
// consumer JetStream refuses for a message not known to be small enough
// for the JSON API: readStored): the original is not gone then, only not
// read, and err says which read failed and why.
func (in *Ingester) fetchOriginal(ctx context.Context, adv Advisory) (*Original, error) {
	st, err := readStored(ctx, in.js, adv.Stream, adv.StreamSeq, false)
	if errors.Is(err, jetstream.ErrMsgNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if st.Headers != nil {
		return &Original{Subject: st.Subject, Header: st.Headers, Data: st.Data, Time: st.Time}, nil
	}
	block := st.Header
	if block == nil {
		block = []byte{}
	}
	return &Original{Subject: st.Subject, HeaderBlock: block, Data: st.Data, Time: st.Time}, nil
}
