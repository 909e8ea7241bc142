package dlq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// streamSetting is one setting of a console's stream (the DLQ stream, the
// advisory stream) the console holds to its own: edited by hand (nats
// stream edit), most of them make JetStream refuse dead letters or delete
// them before they are stored, and no other figure shows it.
type streamSetting struct {
	name string
	// value is the setting as a log line or a health sentence shows it.
	value func(c *jetstream.StreamConfig) string
	// differs reports whether have's value is one the console acts on.
	differs func(have, want *jetstream.StreamConfig) bool
	// put puts want's value into dst and reports whether it can be put
	// back by an update; nil: never by the console (fix says how).
	put func(dst, want *jetstream.StreamConfig) bool
	// stopsLoss: putting it back stops dead letters being refused,
	// deleted or stored where they are not theirs (a subject transform),
	// and is tried on its own when JetStream refuses an update that puts
	// back more (putStreamBack).
	stopsLoss bool
	// removes: putting it back takes a limit off; always logged as a
	// warning and counted, also at setup.
	removes bool
	// fix is the command that puts it back by hand (%[1]s: the stream,
	// %[2]s: the console's consumer on it).
	fix string
	// wanted, when set, is how want's value reads in a report: want holds
	// a floor for it, not a value (the consumer limits, wantedStream).
	wanted func(want *jetstream.StreamConfig) string
}

// remakeStream is how a setting JetStream refuses to change on an
// existing stream is put back.
const remakeStream = "once the console has stored what the stream holds (nats consumer info %[1]s %[2]s: nothing unprocessed or ack pending), delete it (nats stream rm %[1]s -f): every console makes it again within seconds"

// countLimit is a stream's message count limit the console never sets.
// At discard old JetStream deletes the oldest dead letters past it, stored
// or not, so the console takes it off, but only when the stream keeps a bound of the console's
// (consoleBound): a count limit may be the stream's only bound (set by an
// operator, a controller, or in a disk-full emergency), and a stream with
// none grows until the JetStream server's disk is full, which stops every
// stream there. keep, when set, says JetStream needs it as it is (it then
// stays, reported). Otherwise it is reported, with the command.
func countLimit(name string, get func(c *jetstream.StreamConfig) int64, off func(c *jetstream.StreamConfig), keep func(c *jetstream.StreamConfig) bool) streamSetting {
	return streamSetting{name: name,
		value: func(c *jetstream.StreamConfig) string {
			return limitText(get(c) > 0, strconv.FormatInt(get(c), 10))
		},
		differs: func(have, want *jetstream.StreamConfig) bool { return get(have) > 0 },
		put: func(dst, want *jetstream.StreamConfig) bool {
			if !consoleBound(dst, want) || (keep != nil && keep(dst)) {
				return false
			}
			off(dst)
			return true
		},
		removes: true,
		fix:     countLimitFix}
}

// countLimitFix is how a count limit left is taken off (one
// sentence for all of them).
const countLimitFix = "give the stream an age or size limit (nats stream edit %[1]s --max-age AGE or --max-bytes SIZE) with DLQ_MAX_AGE or DLQ_MAX_BYTES set," +
	" and the console takes its count limits off (a per-subject one once discard is not new per subject);" +
	" or, if the stream is bounded otherwise, take them off by hand (nats stream edit %[1]s --max-msgs -1 --max-msgs-per-subject -1)"

// consoleBound reports whether the stream (c, with the console's limits
// raised) has an age or size limit of the console's in force, so that
// taking a count limit off leaves it bounded.
func consoleBound(c, want *jetstream.StreamConfig) bool {
	return (want.MaxAge > 0 && c.MaxAge > 0) || (want.MaxBytes > 0 && c.MaxBytes > 0)
}

// streamSettings are the settings checked. Limits are only raised (see
// limitsNotApplied): an age or size limit below the console's (the DLQ
// stream's DLQ_MAX_AGE and DLQ_MAX_BYTES, the advisory stream's 30 days) is
// raised to it, one above it or none is left as it is, and so is a limit
// the console does not set (DLQ_MAX_AGE or DLQ_MAX_BYTES zero, the advisory
// stream's size). Description, replicas, the duplicate window,
// placement, sources and the rest are left as they are found: an operator
// may tune them (sources may gather other clusters' dead letters) and none
// of them refuses, deletes or moves a dead letter.
var streamSettings = []streamSetting{
	{name: "subjects",
		value: func(c *jetstream.StreamConfig) string { return strings.Join(c.Subjects, ",") },
		differs: func(have, want *jetstream.StreamConfig) bool {
			return slices.ContainsFunc(want.Subjects, func(s string) bool { return !slices.Contains(have.Subjects, s) })
		},
		// The console's subjects, and those of the stream they do not cover
		// (JetStream refuses subjects that overlap within a stream; one an
		// operator added for something else stays).
		put: func(dst, want *jetstream.StreamConfig) bool {
			subjects := slices.Clone(want.Subjects)
			for _, s := range dst.Subjects {
				if !slices.ContainsFunc(want.Subjects, func(w string) bool { return subjectCovers(w, s) }) {
					subjects = append(subjects, s)
				}
			}
			dst.Subjects = subjects
			return true
		},
		stopsLoss: true},
	{name: "max_age",
		value: func(c *jetstream.StreamConfig) string { return limitText(c.MaxAge > 0, c.MaxAge.String()) },
		differs: func(have, want *jetstream.StreamConfig) bool {
			return want.MaxAge > 0 && have.MaxAge > 0 && have.MaxAge < want.MaxAge
		},
		put:       func(dst, want *jetstream.StreamConfig) bool { dst.MaxAge = want.MaxAge; return true },
		stopsLoss: true},
	{name: "max_bytes",
		value: func(c *jetstream.StreamConfig) string {
			return limitText(c.MaxBytes > 0, strconv.FormatInt(c.MaxBytes, 10))
		},
		differs: func(have, want *jetstream.StreamConfig) bool {
			return want.MaxBytes > 0 && have.MaxBytes > 0 && have.MaxBytes < want.MaxBytes
		},
		put:       func(dst, want *jetstream.StreamConfig) bool { dst.MaxBytes = want.MaxBytes; return true },
		stopsLoss: true},
	countLimit("max_msgs",
		func(c *jetstream.StreamConfig) int64 { return c.MaxMsgs },
		func(c *jetstream.StreamConfig) { c.MaxMsgs = -1 }, nil),
	// Discard new per subject needs a per-subject limit: JetStream refuses
	// an update that takes it off while discard is new per subject.
	countLimit("max_msgs_per_subject",
		func(c *jetstream.StreamConfig) int64 { return c.MaxMsgsPerSubject },
		func(c *jetstream.StreamConfig) { c.MaxMsgsPerSubject = -1 },
		func(c *jetstream.StreamConfig) bool { return c.DiscardNewPerSubject }),
	// JetStream refuses a dead letter larger than this. Not a bound of the
	// stream (a count limit with the server's max payload is one without
	// it), so always taken off.
	{name: "max_msg_size",
		value: func(c *jetstream.StreamConfig) string {
			return limitText(c.MaxMsgSize > 0, strconv.FormatInt(int64(c.MaxMsgSize), 10))
		},
		differs: func(have, want *jetstream.StreamConfig) bool { return have.MaxMsgSize > 0 },
		put:     func(dst, want *jetstream.StreamConfig) bool { dst.MaxMsgSize = -1; return true },
		removes: true},
	// Interest retention deletes a dead letter once acked, and every one
	// when the consumer is deleted; putting limits back keeps more. Work
	// queue retention JetStream does not let a stream leave.
	{name: "retention",
		value:   func(c *jetstream.StreamConfig) string { return strings.ToLower(c.Retention.String()) },
		differs: func(have, want *jetstream.StreamConfig) bool { return have.Retention != want.Retention },
		put: func(dst, want *jetstream.StreamConfig) bool {
			if dst.Retention == jetstream.WorkQueuePolicy {
				return false
			}
			dst.Retention = want.Retention
			return true
		},
		fix: remakeStream},
	// Not put back: at a full stream, discard old deletes the oldest dead
	// letters, stored or not, and discard new refuses new ones; which is
	// worse depends on the backlog, so on-call decides.
	{name: "discard",
		value: func(c *jetstream.StreamConfig) string {
			v := strings.TrimPrefix(strings.ToLower(c.Discard.String()), "discard")
			if c.DiscardNewPerSubject {
				v += " per subject"
			}
			return v
		},
		differs: func(have, want *jetstream.StreamConfig) bool {
			return have.Discard != want.Discard || have.DiscardNewPerSubject != want.DiscardNewPerSubject
		},
		fix: "once the console has stored what the stream holds (nats consumer info %[1]s %[2]s), nats stream edit %[1]s --discard old"},
	// Rollups let any producer delete dead letters: one published with
	// Nats-Rollup: all (or sub) deletes every message the stream holds (on
	// its subject), stored by the console or not. JetStream takes them off
	// by an update, unless a subject delete marker TTL or message
	// schedules need them (it then turns them on again).
	{name: "allow_rollup_hdrs",
		value: func(c *jetstream.StreamConfig) string { return strconv.FormatBool(c.AllowRollup) },
		differs: func(have, want *jetstream.StreamConfig) bool {
			return have.AllowRollup && !want.AllowRollup
		},
		put: func(dst, want *jetstream.StreamConfig) bool {
			if dst.SubjectDeleteMarkerTTL > 0 || dst.AllowMsgSchedules {
				return false
			}
			dst.AllowRollup = false
			return true
		},
		stopsLoss: true,
		fix:       remakeStream},
	// Per-message TTLs let a producer's Nats-TTL header delete its dead
	// letter before the console stores it (during an outage, say).
	// JetStream never turns them off on an existing stream.
	{name: "allow_msg_ttl",
		value: func(c *jetstream.StreamConfig) string { return strconv.FormatBool(c.AllowMsgTTL) },
		differs: func(have, want *jetstream.StreamConfig) bool {
			return have.AllowMsgTTL && !want.AllowMsgTTL
		},
		fix: remakeStream},
	// Message counters make the stream refuse every message without
	// Nats-Incr, which no dead letter has: every one is refused.
	// JetStream never changes the setting on an existing stream.
	{name: "allow_msg_counter",
		value: func(c *jetstream.StreamConfig) string { return strconv.FormatBool(c.AllowMsgCounter) },
		differs: func(have, want *jetstream.StreamConfig) bool {
			return have.AllowMsgCounter && !want.AllowMsgCounter
		},
		fix: remakeStream},
	// Message schedules take a dead letter carrying a producer's
	// Nats-Schedule headers for a schedule: when it fires, JetStream
	// publishes a copy to the target subject (another tenant's, a copy of
	// another subject's last message with Nats-Schedule-Source) and
	// deletes the dead letter, stored by the console or not. They need
	// rollups (allow_rollup_hdrs, which JetStream then keeps on), and
	// JetStream never turns them off on an existing stream.
	{name: "allow_msg_schedules",
		value: func(c *jetstream.StreamConfig) string { return strconv.FormatBool(c.AllowMsgSchedules) },
		differs: func(have, want *jetstream.StreamConfig) bool {
			return have.AllowMsgSchedules && !want.AllowMsgSchedules
		},
		fix: remakeStream},
	// A subject transform stores each dead letter under another subject
	// than the one it was published to, and ingest takes the tenant from
	// the stored one: dlq.> to dlq.globex.> files every tenant's dead
	// letters under globex, whose people read them. On the advisory
	// stream it moves each advisory off the subject that names its stream
	// and consumer, and none is followed (checkAdvisoryStream). The
	// console sets none; JetStream takes one off by an update.
	{name: "subject_transform",
		value: func(c *jetstream.StreamConfig) string {
			if c.SubjectTransform == nil {
				return "none"
			}
			return "from " + c.SubjectTransform.Source + " to " + c.SubjectTransform.Destination
		},
		differs: func(have, want *jetstream.StreamConfig) bool {
			return have.SubjectTransform != nil && want.SubjectTransform == nil
		},
		put:       func(dst, want *jetstream.StreamConfig) bool { dst.SubjectTransform = nil; return true },
		stopsLoss: true},
	// A republish sends a copy of every dead letter the stream stores,
	// payload and headers (or headers alone), any tenant's, to other
	// subjects: whoever may subscribe there reads them, past the console's
	// tenants and permissions. The console sets none; JetStream takes one
	// off by an update.
	{name: "republish",
		value: func(c *jetstream.StreamConfig) string {
			if c.RePublish == nil {
				return "none"
			}
			v := "from " + c.RePublish.Source + " to " + c.RePublish.Destination
			if c.RePublish.HeadersOnly {
				v += " headers only"
			}
			return v
		},
		differs: func(have, want *jetstream.StreamConfig) bool { return have.RePublish != nil && want.RePublish == nil },
		put:     func(dst, want *jetstream.StreamConfig) bool { dst.RePublish = nil; return true }},
	// A sealed stream takes no message; JetStream never unseals one.
	{name: "sealed",
		value:   func(c *jetstream.StreamConfig) string { return strconv.FormatBool(c.Sealed) },
		differs: func(have, want *jetstream.StreamConfig) bool { return have.Sealed && !want.Sealed },
		fix:     remakeStream},
	// A memory stream loses every dead letter not yet stored when its
	// server restarts; JetStream refuses to change the storage.
	{name: "storage",
		value:   func(c *jetstream.StreamConfig) string { return strings.ToLower(c.Storage.String()) },
		differs: func(have, want *jetstream.StreamConfig) bool { return have.Storage != want.Storage },
		fix:     remakeStream},
	// Consumer limits cap what each consumer of the stream may ask for,
	// and JetStream gives one that asks for none the limit itself. want
	// holds the least the console works under (wantedStream); the console
	// sets none. An inactive threshold below storedReadIdle: the ingest
	// consumer, which asks for none, is deleted once no console has pulled
	// for that long (a restart of every console), and the next console
	// makes it again; the consumers readByConsumer reads by ask for the
	// limit instead (one under a round trip is gone before its pull). A
	// max ack pending below the ingest consumer's: JetStream refuses to
	// make the consumer, or to raise its max ack pending. Not put back:
	// the limits may be an operator's for other consumers, and JetStream
	// refuses to lower them below a consumer's own.
	{name: "consumer_limits.inactive_threshold",
		value: func(c *jetstream.StreamConfig) string {
			return limitText(c.ConsumerLimits.InactiveThreshold > 0, c.ConsumerLimits.InactiveThreshold.String())
		},
		wanted: func(want *jetstream.StreamConfig) string {
			return "none, or at least " + want.ConsumerLimits.InactiveThreshold.String()
		},
		differs: func(have, want *jetstream.StreamConfig) bool {
			limit := have.ConsumerLimits.InactiveThreshold
			return limit > 0 && limit < want.ConsumerLimits.InactiveThreshold
		},
		fix: consumerLimitsFix},
	{name: "consumer_limits.max_ack_pending",
		value: func(c *jetstream.StreamConfig) string {
			return limitText(c.ConsumerLimits.MaxAckPending > 0, strconv.Itoa(c.ConsumerLimits.MaxAckPending))
		},
		wanted: func(want *jetstream.StreamConfig) string {
			return "none, or at least " + strconv.Itoa(want.ConsumerLimits.MaxAckPending)
		},
		differs: func(have, want *jetstream.StreamConfig) bool {
			limit := have.ConsumerLimits.MaxAckPending
			return limit > 0 && limit < want.ConsumerLimits.MaxAckPending
		},
		fix: consumerLimitsFix},
	ownerSetting,  // the advisory stream's alone (ingest_advisory_owner.go)
	prefixSetting, // the DLQ stream's alone (ingest_dlq_owner.go)
}

// consumerLimitsFix is how a stream's consumer limits are raised or taken
// off by hand: the nats CLI has no flag for them on an edit.
const consumerLimitsFix = "raise the stream's consumer limits or take them off (0): nats stream edit %[1]s -i, consumer_limits" +
	" (nats stream info %[1]s shows them; nats consumer info %[1]s %[2]s the console's max ack pending)"

// subjectCovers reports whether every subject s matches also matches
// pattern (NATS wildcards: * one token, > one or more at the end).
func subjectCovers(pattern, s string) bool {
	p, t := strings.Split(pattern, "."), strings.Split(s, ".")
	for i, tok := range p {
		switch {
		case tok == ">":
			return len(t) > i
		case i >= len(t):
			return false
		case tok == "*":
			if t[i] == ">" {
				return false
			}
		case tok != t[i]:
			return false
		}
	}
	return len(p) == len(t)
}

// streamDrift is how a stream's configuration differs from the
// console's.
type streamDrift struct {
	fixed   jetstream.StreamConfig // the stream's configuration with what can be put back put back
	fixable []string               // "name: theirs → ours" for each setting an update puts back
	removes bool                   // the update takes a limit off
	stuck   []string               // the same for those the console leaves
	fixes   []string               // how to put those back by hand, each once
}

// streamDriftOf compares have with want; durable names the console's consumer in the commands. onlyLoss: only
// the settings that stop loss (streamSetting.stopsLoss) are compared.
func streamDriftOf(have, want jetstream.StreamConfig, durable string, onlyLoss bool) streamDrift {
	d := streamDrift{fixed: have}
	d.fixed.Subjects = slices.Clone(have.Subjects)
	for _, s := range streamSettings {
		if (onlyLoss && !s.stopsLoss) || !s.differs(&have, &want) {
			continue
		}
		before := s.value(&d.fixed)
		if s.put != nil && s.put(&d.fixed, &want) {
			d.fixable = append(d.fixable, s.name+": "+before+" → "+s.value(&d.fixed))
			d.removes = d.removes || s.removes
			continue
		}
		wanted := s.value(&want)
		if s.wanted != nil {
			wanted = s.wanted(&want)
		}
		d.stuck = append(d.stuck, s.name+": "+s.value(&have)+" → "+wanted)
		if fix := fmt.Sprintf(s.fix, have.Name, durable); !slices.Contains(d.fixes, fix) {
			d.fixes = append(d.fixes, fix)
		}
	}
	return d
}

// wantedStream is the configuration the console wants for the stream
// named name; ok is false for a stream that is not the console's. The
// advisory stream's age limit is held as the DLQ stream's are: lowered by
// hand, it deletes the give-ups raised while the console is down or behind
// before they are stored, and nothing else would keep them. Its
// ConsumerLimits are floors, not limits to set: the least a limit of the
// stream may be for the console's consumers (the ingest consumer's max ack
// pending, storedReadIdle), reported when below (streamSettings).
func (in *Ingester) wantedStream(name string) (want jetstream.StreamConfig, ok bool) {
	switch {
	case name == in.cfg.Stream:
		want = in.dlqStreamConfig()
	case name == in.cfg.AdvisoryStream && len(in.cfg.Watch) > 0:
		want = in.advisoryStreamConfig()
	default:
		return jetstream.StreamConfig{}, false
	}
	want.ConsumerLimits = jetstream.StreamConsumerLimits{InactiveThreshold: storedReadIdle, MaxAckPending: in.consumerConfig().MaxAckPending}
	return want, true
}

// putStreamBack updates the stream (have) with what of its settings that
// differ from want's can be put back (streamDriftOf), and returns what it
// found, its fixed being the stream's configuration as it now is.
//
// JetStream has no compare-and-set on a stream's configuration: an update
// sets all of it. So that an edit made since have was read (on-call
// raising a limit, per the runbook) is not undone, the stream is read again
// right before the update and the update computed from that read; an
// edit within that one round trip is still lost.
//
// When JetStream refuses the update, what stops loss (subjects put back,
// limits raised) is tried again on its own, so that one setting it refuses
// does not keep the stream refusing or deleting dead letters; the error
// says what was refused.
//
// An advisory stream that is not this deployment's (claimable: it records
// another as its owner, or none and captures subjects of streams this
// deployment does not know) is not written at all:
// ErrAdvisoryStreamNotOurs. One that records none is stamped with this
// deployment (ownerSetting) by the update.
//
// byHand says that the console has seen the stream with its settings
// before (a check), so that what differs now was changed since: each
// change is then logged as a warning with both values and counted
// (quarantine_dlq_stream_repaired_total); otherwise (a setup that finds the
// stream) it is a deploy's, logged for information, except a limit taken
// off, which is always a warning and counted.
func (in *Ingester) putStreamBack(ctx context.Context, have, want jetstream.StreamConfig, byHand bool) (streamDrift, error) {
	if err := in.claimable(ctx, have, want); err != nil {
		return streamDrift{fixed: have}, err
	}
	d := streamDriftOf(have, want, in.cfg.Durable, false)
	if len(d.fixable) == 0 {
		return d, nil
	}
	if in.beforeStreamUpdate != nil {
		in.beforeStreamUpdate()
	}
	st, err := in.js.Stream(ctx, have.Name)
	if err != nil {
		d.fixed = have
		return d, fmt.Errorf("read stream %s before putting its settings back (%s): %w", have.Name, strings.Join(d.fixable, ", "), err)
	}
	have = st.CachedInfo().Config
	if err := in.ownedElsewhere(have, want); err != nil {
		return streamDrift{fixed: have}, err
	}
	d = streamDriftOf(have, want, in.cfg.Durable, false)
	if len(d.fixable) == 0 {
		return d, nil
	}
	if _, err := in.js.UpdateStream(ctx, d.fixed); err != nil {
		err = fmt.Errorf("put back the settings of stream %s (%s): %w", have.Name, strings.Join(d.fixable, ", "), err)
		d.fixed = have
		l := streamDriftOf(have, want, in.cfg.Durable, true)
		if ctx.Err() != nil || len(l.fixable) == 0 || len(l.fixable) == len(d.fixable) {
			return d, err
		}
		if _, lerr := in.js.UpdateStream(ctx, l.fixed); lerr != nil {
			return d, errors.Join(err, fmt.Errorf("put back only %s: %w", strings.Join(l.fixable, ", "), lerr))
		}
		in.streamRepaired(have.Name, l, byHand)
		d.fixed = l.fixed
		return d, fmt.Errorf("%w; put back only %s", err, strings.Join(l.fixable, ", "))
	}
	in.streamRepaired(have.Name, d, byHand)
	return d, nil
}

// streamRepaired logs and counts an update that put d's changes back
// (putStreamBack): the log line first, so that whoever sees the count
// finds the line that says what changed (TestStreamLimitLoweredByHandIsRaisedBack
// read the log between the two now and then).
func (in *Ingester) streamRepaired(stream string, d streamDrift, byHand bool) {
	switch {
	case byHand:
		in.log.Warn("the stream's settings were changed (by hand?): the console put its own back",
			"stream", stream, "changes", d.fixable)
		in.metrics.health.countStreamRepaired(stream)
	case d.removes:
		in.log.Warn("updated stream: took off limits the console never sets (the stream keeps the console's age or size limit)",
			"stream", stream, "changes", d.fixable)
		in.metrics.health.countStreamRepaired(stream)
	default:
		in.log.Info("updated stream", "stream", stream, "changes", d.fixable)
	}
}

// keepStream compares the settings of stream (have, read by the check)
// with the console's and puts back what it can (putStreamBack). What it
// cannot, or what an update failed to put back, is s's StreamDrift, with
// what to run, logged when it changes. It returns the stream's
// configuration as it now is.
func (in *Ingester) keepStream(ctx context.Context, stream string, have jetstream.StreamConfig, s *StreamHealth) jetstream.StreamConfig {
	s.seen = true
	want, ok := in.wantedStream(stream)
	if !ok {
		return have
	}
	d, err := in.putStreamBack(ctx, have, want, true)
	var problems []string
	if err != nil && ctx.Err() == nil {
		problems = append(problems, err.Error())
	}
	if len(d.stuck) > 0 {
		problems = append(problems, strings.Join(d.stuck, ", ")+". To put it back: "+strings.Join(d.fixes, "; "))
	}
	was := s.StreamDrift
	s.StreamDrift = strings.Join(problems, "; ")
	if s.StreamDrift != was && s.StreamDrift != "" {
		in.log.Error("the stream's settings are not the console's and were not put back: dead letters may be refused or deleted before they are stored",
			"stream", stream, "drift", s.StreamDrift)
	}
	return d.fixed
}
