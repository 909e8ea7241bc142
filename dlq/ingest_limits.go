package dlq

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// MinStreamMaxAge is the least DLQ_MAX_AGE other than 0, and the least
// age limit of the DLQ stream the console takes without a warning
// (floorOf). JetStream discards a dead letter older than the limit
// whether or not a console stored it, and DeadLetterStreamNearLimit
// (docs/alerts.yml) fires once the oldest one not stored has taken half of
// it for 5 minutes: at 15 minutes the alert comes 2.5 minutes before the
// first loss, and below 10 it cannot come first at all.
const MinStreamMaxAge = 15 * time.Minute

// minStreamMaxAgeText is MinStreamMaxAge as messages write it.
var minStreamMaxAgeText = fmt.Sprintf("%dm", MinStreamMaxAge/time.Minute)

// CheckStreamMaxAge refuses a DLQ_MAX_AGE other than 0 below
// MinStreamMaxAge; the error does not name the setting (its caller does).
func CheckStreamMaxAge(d time.Duration) error {
	if d == 0 || d >= MinStreamMaxAge {
		return nil
	}
	return fmt.Errorf("must be 0 or at least %[1]s: JetStream discards dead letters older than it, stored or not, and the alert "+
		"DeadLetterStreamNearLimit, which fires when the oldest not stored has taken half of it for 5 minutes, could not warn in time "+
		"(keep it at hours or more; 0 keeps an existing stream's own age limit, warned of when below %[1]s, and makes a new one with none)", minStreamMaxAgeText)
}

// AckWaitsInMaxAge is how many ingest ack waits the DLQ stream's age
// limit must hold (CheckStreamMaxAgeAgainstAckWait).
const AckWaitsInMaxAge = 4

// CheckStreamMaxAgeAgainstAckWait refuses a DLQ_MAX_AGE other than 0
// shorter than AckWaitsInMaxAge ingest ack waits (INGEST_ACK_WAIT). A
// replica killed with a batch in hand (SIGKILL, OOM, a lost host) holds it
// unacked, and JetStream delivers it again only after the ack wait, to
// the replicas left; it discards a message at the age limit whether or
// not it was acked. With an ack wait near the age limit, the batch of a
// killed replica is discarded before it is delivered again, and its dead
// letters are never stored: the sweep finds only what was acked.
// DeadLetterStreamNearLimit fires at half the age limit; four ack waits
// leave the time after it that the alert promises. The error does not
// name the settings (its caller does).
func CheckStreamMaxAgeAgainstAckWait(maxAge, ackWait time.Duration) error {
	if maxAge == 0 || maxAge >= AckWaitsInMaxAge*ackWait {
		return nil
	}
	return fmt.Errorf("must be 0 or at least %d times the ingest ack wait (%s, so at least %s): JetStream delivers a batch a killed replica held again "+
		"only after the ack wait, and discards its dead letters at the age limit first, unstored", AckWaitsInMaxAge, ackWait, AckWaitsInMaxAge*ackWait)
}

// CheckStreamMaxBytes refuses a DLQ_MAX_BYTES other than 0 below twice
// maxPayload, the NATS server's max_payload (0: unknown, nothing
// refused): JetStream takes a dead letter into a stream whose size limit
// it exceeds, acks it to its producer and discards it at once, before any
// console reads it, and no figure shows it (the stream holds nothing, so
// nothing is pending and the limit's risk reads 0). At twice the largest
// message the server takes, one dead letter of the largest size always
// fits. The error does not name the setting (its caller does).
func CheckStreamMaxBytes(n, maxPayload int64) error {
	if floor := 2 * maxPayload; n != 0 && n < floor {
		return fmt.Errorf("must be 0 or at least %[1]d bytes, twice the NATS server's max_payload (%[2]d): JetStream would ack to its producer, "+
			"then discard, every dead letter larger than the limit, before any console could store it, with no figure showing it "+
			"(like 10GiB; 0 keeps an existing stream's own size limit, warned of when below %[1]d, and makes a new one with none)", floor, maxPayload)
	}
	return nil
}

// checkLimits refuses DLQ_MAX_AGE and DLQ_MAX_BYTES (StreamMaxAge,
// StreamMaxBytes) that would lose dead letters unseen (CheckStreamMaxAge,
// CheckStreamMaxBytes with the max_payload of the server connected to),
// whether the stream is made with them or exists already: the next console
// to make it again (after `nats stream rm`) would. Only Setup, at start,
// refuses them: a running replica sets ingest up again (setUpAgain) on
// servers whose max_payload may have been raised since.
func (in *Ingester) checkLimits() error {
	if err := CheckStreamMaxAge(in.cfg.StreamMaxAge); err != nil {
		return fmt.Errorf("DLQ_MAX_AGE %s: %w", in.cfg.StreamMaxAge, err)
	}
	if err := CheckStreamMaxAgeAgainstAckWait(in.cfg.StreamMaxAge, in.cfg.AckWait); err != nil {
		return fmt.Errorf("DLQ_MAX_AGE %s: %w", in.cfg.StreamMaxAge, err)
	}
	if err := CheckStreamMaxBytes(in.cfg.StreamMaxBytes, in.serverMaxPayload()); err != nil {
		return fmt.Errorf("DLQ_MAX_BYTES %d: %w", in.cfg.StreamMaxBytes, err)
	}
	return nil
}

// setUpAgain is Setup for a running replica (again, pauseForPostgres): a
// limit checkLimits refuses now (the NATS operator raised max_payload
// since the start) is logged as a warning, never a reason to stop
// consuming: a replica that refused would take no dead letter while its
// stream, too small, discards them. The stream's own limits are warned of
// and exported (holdFloor), and a stream made again is made with a
// size that fits (fitToPayload). When only the announce of the watched
// streams fails (errNotAnnounced: ingest_watchers not answering, where
// setUp stops, after the DLQ stream and its consumer), the advisory side
// alone waits: the advisory stream, if it is there, is consumed with the
// subjects it has (taken on announces before), and the next check
// announces again (keepWatchers); DLQ ingest is not held for it.
func (in *Ingester) setUpAgain(ctx context.Context) error {
	if err := in.checkLimits(); err != nil {
		in.log.Warn("a limit the console refuses at start is in force, ingest goes on; change it before the next start, which refuses it",
			"stream", in.cfg.Stream, "err", err)
	}
	err := in.setUp(ctx)
	if !errors.Is(err, errNotAnnounced) {
		return err
	}
	if cerr := in.ensureConsumer(ctx, in.cfg.AdvisoryStream); cerr != nil {
		return fmt.Errorf("%w (and the advisory consumer: %w)", err, cerr)
	}
	in.log.Warn("the watched streams could not be announced: ingest goes on, the advisory stream with the subjects it has; the next check announces them again",
		"advisory_stream", in.cfg.AdvisoryStream, "err", err)
	return nil
}

// serverMaxPayload is the max_payload of the NATS server the connection is
// on now; 0 when unknown.
func (in *Ingester) serverMaxPayload() int64 {
	if nc := in.js.Conn(); nc != nil {
		return nc.MaxPayload()
	}
	return 0
}

// payloadFloor is want, the DLQ stream to be made, with a size limit below
// twice maxPayload raised to it (raised: it was); no size limit stays none.
func payloadFloor(want jetstream.StreamConfig, maxPayload int64) (fit jetstream.StreamConfig, raised bool) {
	if want.MaxBytes > 0 && CheckStreamMaxBytes(want.MaxBytes, maxPayload) != nil {
		want.MaxBytes = 2 * maxPayload
		return want, true
	}
	return want, false
}

// fitToPayload is payloadFloor with the server's max_payload now, and says
// so when it raised the limit: DLQ_MAX_BYTES was taken at start, and the
// max_payload raised since.
func (in *Ingester) fitToPayload(want jetstream.StreamConfig) jetstream.StreamConfig {
	fit, raised := payloadFloor(want, in.serverMaxPayload())
	if raised {
		in.log.Warn("making the DLQ stream with twice the NATS server's max_payload as its size limit, not DLQ_MAX_BYTES, which is below it now "+
			"(max_payload raised since the console started): with less, JetStream would discard the largest dead letters before any console stored them; "+
			"set DLQ_MAX_BYTES to at least it (or 0), or the next start refuses it",
			"stream", want.Name, "max_bytes", want.MaxBytes, "made_with", fit.MaxBytes, "max_payload", in.serverMaxPayload())
	}
	return fit
}

// floorOf reports which of the DLQ stream's own limits (c) are below the
// floors DLQ_MAX_AGE and DLQ_MAX_BYTES are held to at start
// (CheckStreamMaxAge and CheckStreamMaxAgeAgainstAckWait with ackWait,
// CheckStreamMaxBytes with maxPayload): a stream keeps
// its own limit when the setting is 0, or when the setting is lower (a
// console never lowers one), or was made when the server's max_payload was
// lower. No limit is below nothing.
func floorOf(c jetstream.StreamConfig, maxPayload int64, ackWait time.Duration) (age, bytes bool) {
	age = c.MaxAge > 0 && (CheckStreamMaxAge(c.MaxAge) != nil || CheckStreamMaxAgeAgainstAckWait(c.MaxAge, ackWait) != nil)
	return age, c.MaxBytes > 0 && CheckStreamMaxBytes(c.MaxBytes, maxPayload) != nil
}

// limitFloor is which of a stream's limits are below their floors
// (floorOf).
type limitFloor struct{ age, bytes bool }

// setFloor records f for stream and returns what was recorded before.
func (b *healthBoard) setFloor(stream string, f limitFloor) (was limitFloor) {
	b.mu.Lock()
	defer b.mu.Unlock()
	was = b.belowFloor[stream]
	b.belowFloor[stream] = f
	return was
}

// floors is belowFloor, copied.
func (b *healthBoard) floors() map[string]limitFloor {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.belowFloor)
}

// holdFloor records whether the DLQ stream's limits (c, as the
// stream now is) are below their floors (floorOf: gauge
// quarantine_dlq_stream_limit_below_floor, alert
// DeadLetterStreamLimitBelowFloor) and logs each that is as a warning with
// the `nats stream edit` that raises it: every time when always (a setup),
// else when it was not before (a check); one no longer below is logged
// once. Ingest goes on whatever it finds: the console raises a stream's
// limit only to its settings, and refusing would lose more.
func (in *Ingester) holdFloor(c jetstream.StreamConfig, always bool) {
	maxPayload := in.serverMaxPayload()
	ackWait := in.ackWaitInForce()
	age, bytes := floorOf(c, maxPayload, ackWait)
	was := in.metrics.health.setFloor(c.Name, limitFloor{age, bytes})
	wasAge, wasBytes := was.age, was.bytes
	switch {
	case age && (always || !wasAge):
		least := max(MinStreamMaxAge, AckWaitsInMaxAge*ackWait)
		in.log.Warn("the DLQ stream's own age limit is below "+minutesText(least)+", the least DLQ_MAX_AGE may be (at least "+minStreamMaxAgeText+
			" and 4 of the DLQ consumer's ack waits): JetStream discards dead letters older than it, stored or not, DeadLetterStreamNearLimit cannot warn before it does, "+
			"and a killed replica's batch may be discarded before it is delivered again; ingest goes on (DLQ_MAX_AGE 0 keeps the stream's own limit). "+
			"Raise it (hours or more): nats stream edit "+c.Name+" --max-age "+durationArg(max(least, in.cfg.StreamMaxAge)),
			"stream", c.Name, "stream_max_age", c.MaxAge, "least", least, "max_age", in.cfg.StreamMaxAge, "ack_wait", ackWait)
	case wasAge && !age:
		in.log.Info("the DLQ stream's age limit is no longer below the least DLQ_MAX_AGE may be", "stream", c.Name, "stream_max_age", limitText(c.MaxAge > 0, c.MaxAge.String()))
	}
	switch {
	case bytes && (always || !wasBytes):
		in.log.Warn("the DLQ stream's size limit is below twice the NATS server's max_payload: JetStream may discard a dead letter near max_payload in size, "+
			"or the dead letters before it, before any console stores them, with no figure showing it; ingest goes on. "+
			"Raise it, and DLQ_MAX_BYTES to at least as much (or 0, which keeps the stream's own; the next start refuses a lower one): nats stream edit "+c.Name+" --max-bytes "+strconv.FormatInt(2*maxPayload, 10),
			"stream", c.Name, "stream_max_bytes", c.MaxBytes, "max_payload", maxPayload, "least", 2*maxPayload, "max_bytes", in.cfg.StreamMaxBytes)
	case wasBytes && !bytes:
		in.log.Info("the DLQ stream's size limit is no longer below twice the NATS server's max_payload", "stream", c.Name,
			"stream_max_bytes", limitText(c.MaxBytes > 0, strconv.FormatInt(c.MaxBytes, 10)), "max_payload", maxPayload)
	}
}

// limitsNotApplied logs each of want's age and size limits that the
// stream (have) does not take: a console raises a lower limit to its own
// (streamSettings), but never lowers one, nor sets one on a stream that has
// none (the largest limit): JetStream would discard at once the oldest
// messages past the lower limit, stored in PostgreSQL or not. Replicas run
// with the value they were deployed with, and on-call raises a limit to
// save a backlog (the runbook's DeadLetterStreamNearLimit): the next
// replica to start, or to set ingest up again, would put its lower value
// back. Each limit left higher than the console's is logged, at every
// setup, with the command that lowers it on purpose (notApplied).
func (in *Ingester) limitsNotApplied(have, want jetstream.StreamConfig) {
	const why, when = "JetStream would discard at once the oldest dead letters past it, stored or not", "once the dead letters it would discard are stored"
	if want.MaxAge > 0 && (have.MaxAge <= 0 || have.MaxAge > want.MaxAge) {
		in.notApplied("DLQ_MAX_AGE", "stream's age limit", why, when, "nats stream edit "+have.Name+" --max-age "+durationArg(want.MaxAge),
			"stream", have.Name, "max_age", want.MaxAge, "stream_max_age", limitText(have.MaxAge > 0, have.MaxAge.String()))
	}
	// Lowered on purpose, never below twice the server's max_payload now
	// (a DLQ_MAX_BYTES taken at start may be below it: setUpAgain).
	if to, _ := payloadFloor(want, in.serverMaxPayload()); to.MaxBytes > 0 && (have.MaxBytes <= 0 || have.MaxBytes > to.MaxBytes) {
		in.notApplied("DLQ_MAX_BYTES", "stream's size limit", why, when, "nats stream edit "+have.Name+" --max-bytes "+strconv.FormatInt(to.MaxBytes, 10),
			"stream", have.Name, "max_bytes", want.MaxBytes, "stream_max_bytes", limitText(have.MaxBytes > 0, strconv.FormatInt(have.MaxBytes, 10)))
	}
}

// notApplied logs, as a warning, that setting is not applied: it is below
// what (the stream's or the consumer's own value), which a console only
// ever raises to its settings, never lowers (why), and gives the command
// that lowers it on purpose (when: the condition to wait for first). Every
// setting with that one-way rule (DLQ_MAX_AGE, DLQ_MAX_BYTES,
// INGEST_ACK_WAIT, INGEST_BATCH_SIZE's max_ack_pending) says it here, in
// the same words, at every setup.
func (in *Ingester) notApplied(setting, what, why, when, command string, attrs ...any) {
	in.log.Warn(setting+" not applied: it is below the "+what+", and a console never lowers one ("+why+"). To lower it on purpose, "+when+": "+command, attrs...)
}

// limitText is a stream's limit in a log line: "none" when it has none.
func limitText(set bool, v string) string {
	if !set {
		return "none"
	}
	return v
}

// sawConsumer notes the ack wait of stream's consumer as read (have), when
// stream is the DLQ stream (ackWaitInForce).
func (in *Ingester) sawConsumer(stream string, have jetstream.ConsumerConfig) {
	if stream == in.cfg.Stream {
		in.consumerAckWait.Store(int64(have.AckWait))
	}
}

// ackWaitInForce is the ack wait redeliveries of the DLQ stream follow:
// the DLQ consumer's as last read, when above this console's setting (a
// console raises it, never lowers it), else the setting.
func (in *Ingester) ackWaitInForce() time.Duration {
	return max(in.cfg.AckWait, time.Duration(in.consumerAckWait.Load()))
}

// minutesText is d as 15m, 2h30m, 4h, or 15m20s when it is not whole
// minutes.
func minutesText(d time.Duration) string {
	t := d.String()
	if d%time.Minute == 0 {
		t = strings.TrimSuffix(t, "0s")
	}
	if strings.HasSuffix(t, "h0m") {
		t = strings.TrimSuffix(t, "0m")
	}
	return t
}

// durationArg writes d as the nats CLI takes it: whole hours, or seconds.
func durationArg(d time.Duration) string {
	if d%time.Hour == 0 {
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	}
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10) + "s"
}
