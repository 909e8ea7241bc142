package dlq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// What the sweep holds, and for how long. A missing dead letter the sweep
// cannot store is held (tried again at every sweep, the watermark before
// it), but what holds it must not be the message itself for long: a
// hostile message PostgreSQL refuses in every form, or one the stream will
// not give, would otherwise be held for good, and sweepHeldMax of them
// would stop the sweep from proving anything after them. So the sweep
// tells two kinds of failure apart:
//
//   - Wide: NATS or PostgreSQL could not answer for any message (a
//     timeout, no responders, a closed connection, JetStream or the stream
//     unavailable: sweepWide; PostgreSQL unreachable or busy: Store.Insert's
//     error). The step stops there, nothing is counted against the message,
//     and the next sweep goes on from it.
//   - Its own: the read of that one message failed while another read of
//     the same stream in the step gave a message (sweepAnswers), or
//     PostgreSQL refused it alone (isolated) in its parsed and its raw form.
//     It is held, the step goes on with the others, and each sweep that
//     fails it so is counted (sweepFailed). At sweepHeldTries such sweeps it
//     is stored in its position form (contentRefusedForm, unreadForm):
//     where it lies and why, flagged, without what was refused. Only a
//     PostgreSQL that refuses even that (it refuses every row, not this
//     one) keeps holding it.
//
// A read answered with something that is not the message while no read
// of the stream gives one is wide too: an answer of that kind (an account
// subject mapping or another service answering the stream's
// $JS.API.STREAM.MSG.GET, an API error for every request) is every
// message's. JetStream itself answers a message it cannot load "no
// message found" (nats-server's jsMsgGetRequest, whatever the load
// error), which the sweep takes as gone from the stream: a read failing
// for one message alone while the others read is an answer from
// something other than JetStream (or from a JetStream to come).
//
// An advisory whose original (or consumer) cannot be read for a reason
// that is not wide is held the same way and stored flagged
// original_unreadable after maxHeaderRereads sweeps (sweptRecord), as
// ingest stores it after as many deliveries.
//
// The counts are kept in memory, per replica: a console restarted counts
// again from 0, and replicas taking turns each count their own turns; the
// held sequences themselves are in PostgreSQL (migration 0043). They are
// counts of the stream as made when they were counted (sweepCountsOf): a
// stream made again numbers from 1 again, and the counts of the one
// before would cut short the hold of the new one's messages.

// sweepHeldTries is how many sweeps may fail to store a held dead letter
// for a reason of its own before its position form is stored: as many as
// the deliveries ingest waits for a header block or an advisory's
// original (maxHeaderRereads). With SweepEvery's default of 30 s, a
// hostile message holds the watermark some two minutes.
const sweepHeldTries = maxHeaderRereads

// sweepWide reports whether err, a failed request to NATS, says NATS or
// JetStream could not answer it for any message: no message's fault. A
// timeout is taken as wide: another read would wait as long.
func sweepWide(err error) bool {
	if errors.Is(err, errNoMessageRead) {
		return true // whatever the failure it wraps
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case jetstream.JSErrCodeJetStreamNotEnabled, jetstream.JSErrCodeJetStreamNotEnabledForAccount, jetstream.JSErrCodeStreamNotFound:
			return true
		}
		return apiErr.Code == 503 // no quorum, the cluster not available
	}
	return errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrConnectionDraining) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// errNoMessageRead says that no read of a stream gave a message in a
// step, neither the one that failed nor another (sweepAnswers): the
// failure is the stream's or NATS's, not the message's.
var errNoMessageRead = errors.New("no read of the stream gave a message, so its failure is not the message's own")

// sweepAnswers tells whether the failure of the read of stream #failed
// (why, not wide) is the message's own: when no other read of the stream
// in the step gave a message yet, it reads the first message after it,
// else the stream's first, and returns nil when one of them gives a
// message other than failed. Otherwise it returns an error sweepWide
// takes as wide: that read's wide failure, or errNoMessageRead with why.
// It costs a read or two once per step, and only when a read fails.
func (in *Ingester) sweepAnswers(ctx context.Context, stream string, failed uint64, why error) error {
	for _, seq := range []uint64{failed + 1, 1} {
		st, err := readStored(ctx, in.js, stream, seq, true)
		switch {
		case err == nil && st.Seq != failed:
			return nil
		case err != nil && sweepWide(err):
			return err
		}
	}
	return fmt.Errorf("%w: %w", errNoMessageRead, why)
}

// sweepCountsOf makes the sweep's counts (sweepFailed, sweepRetry) of
// stream those of the stream made at created, as the step that calls it
// (before it counts anything) found it: counted under another making of
// the stream, they are forgotten. Whichever replica's step first sees the
// stream made again, every replica forgets its own counts of the old one
// at its next step of the stream.
func (in *Ingester) sweepCountsOf(stream string, created time.Time) {
	in.sweeping.mu.Lock()
	defer in.sweeping.mu.Unlock()
	if was, ok := in.sweeping.counted[stream]; ok && was.Equal(created) {
		return
	}
	if in.sweeping.counted == nil {
		in.sweeping.counted = map[string]time.Time{}
	}
	in.sweeping.counted[stream] = created
	in.forgetLocked(stream, func(uint64) bool { return false })
}

// sweepSeq names a stream message for the sweep's counts.
type sweepSeq struct {
	stream string
	seq    uint64
}

// sweepFailed counts a sweep that could not store stream #seq for a
// reason of its own and reports whether that was the sweepHeldTries-th:
// its position form is stored then.
func (in *Ingester) sweepFailed(stream string, seq uint64) bool {
	in.sweeping.mu.Lock()
	defer in.sweeping.mu.Unlock()
	if in.sweeping.failed == nil {
		in.sweeping.failed = map[sweepSeq]int{}
	}
	k := sweepSeq{stream, seq}
	in.sweeping.failed[k]++
	return in.sweeping.failed[k] >= sweepHeldTries
}

// sweepForget forgets the counts (sweepFailed, sweepRetry) of the
// sequences of stream that keep does not keep: those stored or deleted.
func (in *Ingester) sweepForget(stream string, keep func(seq uint64) bool) {
	in.sweeping.mu.Lock()
	defer in.sweeping.mu.Unlock()
	in.forgetLocked(stream, keep)
}

// forgetLocked is sweepForget with in.sweeping.mu held.
func (in *Ingester) forgetLocked(stream string, keep func(seq uint64) bool) {
	for _, m := range []map[sweepSeq]int{in.sweeping.failed, in.sweeping.retries} {
		for k := range m {
			if k.stream == stream && !keep(k.seq) {
				delete(m, k)
			}
		}
	}
}

// unreadForm is the position form of stream #seq, a dead letter the sweep
// could not read from the stream in sweepHeldTries sweeps (cause) while
// NATS answered: all it knows is where it lies. Its subject is unknown,
// so it goes to tenant unknown, item type unknown; its stored time is
// unknown, so it is kept under now and its key is one of its own
// ("<stream> #<seq> unread"): a delivery of it would be stored again, as
// itself. kind is SourceDLQ or SourceAdvisory (an advisory not read: its
// original is unknown too). Flagged message_unreadable; never replayed (no
// original subject, no payload).
func unreadForm(kind, stream string, seq uint64, cause error) Record {
	r := Record{
		Tenant:             UnknownTenant,
		ItemType:           "unknown",
		ErrorClass:         ClassUnclassified,
		DeadLetteredAt:     time.Now().UTC(),
		Headers:            []HeaderValue{},
		PayloadUnavailable: true,
		SourceKind:         kind,
		SourceStream:       cut(CleanText(stream), 255),
		SourceSeq:          seq,
		Delivery:           fmt.Sprintf("%s #%d unread", CleanText(stream), seq),
		MsgIDDerived:       true,
	}
	r.SourceKey = SourceKey(r.Delivery)
	r.MsgID = fmt.Sprintf("%s:%d:unread", r.SourceStream, seq)
	r.setPayload(nil)
	r.Error = cut(fmt.Sprintf("not read: the stream did not give this dead letter in %d sweeps running: %s", sweepHeldTries, CleanText(cause.Error())), rawFormReasonLen)
	r.flag("message_unreadable", "%s; only where it lies is stored: read it from the stream while it holds it (nats stream get %s %d)", r.Error, r.SourceStream, seq)
	r.Fingerprint = Fingerprint(r.ErrorClass, "not read from its stream", "")
	return r
}
