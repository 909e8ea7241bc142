package dlq

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// What a producer's values are checked against. A value outside is kept as
// sent when its column can hold it, and flagged implausible:<field>.
var (
	// MinPlausibleTime is the earliest failure time taken at face value:
	// anything before 2000 is a zero value or a unit mix-up.
	MinPlausibleTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	// MinPlausibleStoredTime is the earliest time a JetStream server's
	// stored time is taken at face value (checkStoredAt). JetStream came
	// out in 2021 (nats-server 2.2), so no stream stored a message before
	// 2020: an earlier stored time is a server clock that was reset (to
	// 1970, or to 2000-01-01, the reset value of the usual RTC chips and
	// of many boards without one, and counted on from there), however
	// long it ran since.
	MinPlausibleStoredTime = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
)

const (
	// MaxClockSkew is how far past the moment JetStream stored the dead
	// letter a failure time may lie before it counts as in the future.
	MaxClockSkew = time.Hour
	// MaxPlausibleAttempts is the most delivery attempts taken at face
	// value: a consumer retrying every second for a day makes 86,400.
	MaxPlausibleAttempts = 100_000
)

// maxStoredAhead is how far past now a row's dead-lettered time may lie:
// partitions are made at most maxPartitionDays ahead (a day less, so that
// the database's clock may be a little behind ours).
const maxStoredAhead = (maxPartitionDays - 1) * 24 * time.Hour

// checkStoredAt keeps the row's dead-lettered time where a partition can
// hold it and where it means something. JetStream's stored time is the
// NATS server's clock: a server whose clock is before 2000 (a machine that
// lost its clock) or more than a year ahead made a row no partition takes,
// refused in both forms and redelivered every 30 s, even after the clock
// was set right; one whose clock was reset to 2000-01-01 (an RTC's reset
// value) made a row for a day 20-odd years past every retention period.
// A stored time before MinPlausibleStoredTime, or more than a year ahead,
// is kept under the UTC day the row arrived (its midnight, so that a
// redelivery on the same day finds the same key), flagged; the delivery
// still names the stored time. (Retention would keep such a row anyway:
// it judges a row's age by the later of its stored time and when the
// console stored it, mayGo.) The judgement is by when the delivery
// arrives, so two deliveries of one message stored far ahead may be kept
// under two days; the insert looks for the other (mayBeKeptUnderAnotherDay,
// unstored).
func (r *Record) checkStoredAt(now time.Time) {
	at := r.DeadLetteredAt
	if at.IsZero() || plausibleStoredAt(at, now) {
		return
	}
	r.DeadLetteredAt, r.arrivedAt = Day(now), now.UTC()
	r.flag(FlagImplausibleStoredAt, "JetStream stored it at %s by the NATS server's clock, before %d (a server clock that was reset) or more than %d days ahead: kept under the day it arrived, %s",
		at.UTC().Format(time.RFC3339Nano), MinPlausibleStoredTime.Year(), maxPartitionDays-1, r.DeadLetteredAt.Format(time.DateOnly))
}

// FlagImplausibleStoredAt flags a row checkStoredAt kept under the day
// it arrived: its dead_lettered_at is that day's midnight, not when it was
// dead-lettered, which only its received_at bounds (DeadLetteredBy).
const FlagImplausibleStoredAt = "implausible:dead_lettered_at"

// keptUnderArrivalDay says whether r is kept under the day it arrived
// (FlagImplausibleStoredAt): a delivery of its message on another day has
// the same source key under another day, which the unique index does not
// see (unstored looks, keptUnderADay).
func (r *Record) keptUnderArrivalDay() bool {
	return slices.Contains(r.Flags, FlagImplausibleStoredAt)
}

// farAhead is how far past now a stored time taken at face value must lie
// for its row to be looked up under other days as well
// (Record.mayBeKeptUnderAnotherDay): a week.
const farAhead = 7 * 24 * time.Hour

// mayBeKeptUnderAnotherDay says whether a delivery of r's message may have
// been kept under another day than the one r is kept under, which the
// unique index, on (dead_lettered_at, source_key), does not see: r is kept
// under the day it arrived (keptUnderArrivalDay), or r's stored time, taken
// at face value at now, lies more than farAhead past now. checkStoredAt
// judges a stored time by when the delivery arrives: one more than
// maxStoredAhead ahead when a first delivery came (or by the clock of the
// replica that took it) is within it for a later delivery (a lost ack, an
// ingest consumer made again from the stream's first message; a message
// stored in the future is never aged out), which is kept under the stored
// time while the first was kept under its arrival day
// (TestRevIngest22AheadClockRedeliveryJudgedPlausibleStoredAgain). Such a
// row looks its key up under every day's midnight (keptUnderADay), as one
// kept under the day it arrived does.
//
// Why farAhead, a week, rather than a margin of days short of
// maxStoredAhead: the earlier delivery judged the stored time more than
// maxStoredAhead ahead, so a later one that finds it less than farAhead
// ahead comes more than 392 days after it (which is left uncovered),
// while a margin of days would miss a redelivery weeks later. And the hot
// path never looks: JetStream stores a message before delivering it, so
// with sane clocks a stored time lies at most seconds past now; only the
// rows of a NATS server whose clock runs more than a week ahead (or of an
// ingester whose clock is a week behind) are looked up, one query per
// batch holding them, as those kept under the day they arrived are. The
// other order, a row kept under its stored time and a later delivery
// judged implausible (by a replica whose clock is behind), unstored finds
// by the stored time the delivery names.
func (r *Record) mayBeKeptUnderAnotherDay(now time.Time) bool {
	return r.keptUnderArrivalDay() || r.DeadLetteredAt.After(now.Add(farAhead))
}

// DeadLetteredBy is the latest time a dead letter can have been stored in
// the DLQ stream: when JetStream stored it (deadLetteredAt), or, when
// ingest flagged that time implausible (FlagImplausibleStoredAt: its NATS
// server's clock was reset, or far ahead, and the row is kept under the
// midnight of the UTC day it arrived), when the console stored it
// (receivedAt). That midnight is no time it failed, and earlier than it
// was stored. The replay rules take this as when it failed (a fix counts
// for it only when in place after that; from the midnight, a fix in place
// at any hour of the day would cover a dead letter that arrived after it,
// TestRevIngest17FixBeforeAResetClockDeadLetterArrivedDoesNotCover), the
// dead letter page says of each fix whether it came after it by the same
// time, and a replay's first attempt waits for the windows of streams that
// copy its target from it (from the midnight, a copy that still holds the
// original's id would drop the replay,
// TestRevIngest17CopyWindowOfAResetClockDeadLetterCountsFromItsArrival).
func DeadLetteredBy(deadLetteredAt, receivedAt time.Time, flags []string) time.Time {
	if slices.Contains(flags, FlagImplausibleStoredAt) && receivedAt.After(deadLetteredAt) {
		return receivedAt
	}
	return deadLetteredAt
}

// plausibleStoredAt reports whether a NATS server's stored time t is taken
// at face value at now: not before MinPlausibleStoredTime and less than
// maxStoredAhead past now. checkStoredAt keeps a row whose stored time is
// not under the day it arrived; ParseAdvisory then judges the original
// against when the advisory was received instead.
func plausibleStoredAt(t, now time.Time) bool {
	return !t.Before(MinPlausibleStoredTime) && t.Before(now.Add(maxStoredAhead))
}

// attempts reads Dlq-Attempts. A value that is not a whole number is
// invalid; a negative one, or one past int32, is implausible and not stored;
// one past MaxPlausibleAttempts is stored and flagged.
func (r *Record) attempts(v string) *int32 {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	switch {
	case err != nil && !isIntegerText(v):
		r.flag("invalid:attempts", "%s %s is not a whole number of attempts", HeaderAttempts, short(v))
		return nil
	case err != nil || n > math.MaxInt32:
		r.flag("implausible:attempts", "%s %s is too large to be a number of attempts: not stored", HeaderAttempts, short(v))
		return nil
	case n < 0:
		r.flag("implausible:attempts", "%s %s is negative, not a whole number of attempts: not stored", HeaderAttempts, short(v))
		return nil
	case n > MaxPlausibleAttempts:
		r.flag("implausible:attempts", "%s %d is more attempts than any consumer makes (over %d): stored as sent", HeaderAttempts, n, MaxPlausibleAttempts)
	}
	a := int32(n)
	return &a
}

// isIntegerText reports whether v is an optionally signed run of digits
// (too long for int64 is still an integer).
func isIntegerText(v string) bool {
	v = strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(v), "-"), "+")
	if v == "" {
		return false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// checkPlausible flags failure times before MinPlausibleTime, later than
// when the dead letter was stored (plus MaxClockSkew), or in the wrong
// order. They are stored as sent. A dead letter whose stored time was
// implausible (checkStoredAt) is judged by when it arrived, not by the
// midnight it is kept under, which is no time it was stored
// (TestRevIngest18ResetClockFlagsTruthfulFailureTimesImplausible).
func (r *Record) checkPlausible() {
	stored, storedWhen := r.DeadLetteredAt, "when the dead letter was stored"
	if !r.arrivedAt.IsZero() {
		stored, storedWhen = r.arrivedAt, "when the dead letter arrived"
	}
	times := []struct {
		field, header string
		t             *time.Time
	}{{"first_failed_at", HeaderFirstFailedAt, r.FirstFailedAt}, {"last_failed_at", HeaderLastFailedAt, r.LastFailedAt}}
	for _, x := range times {
		switch {
		case x.t == nil:
		case x.t.Before(MinPlausibleTime):
			r.flag("implausible:"+x.field, "%s %s is before %d: stored as sent", x.header, x.t.Format(time.RFC3339Nano), MinPlausibleTime.Year())
		case !stored.IsZero() && x.t.After(stored.Add(MaxClockSkew)):
			r.flag("implausible:"+x.field, "%s %s is later than %s (%s): stored as sent",
				x.header, x.t.Format(time.RFC3339Nano), storedWhen, stored.UTC().Format(time.RFC3339))
		}
	}
	if r.FirstFailedAt != nil && r.LastFailedAt != nil && r.FirstFailedAt.After(*r.LastFailedAt) {
		r.flag("implausible:first_failed_at", "%s %s is after %s %s: stored as sent", HeaderFirstFailedAt,
			r.FirstFailedAt.Format(time.RFC3339Nano), HeaderLastFailedAt, r.LastFailedAt.Format(time.RFC3339Nano))
	}
}
