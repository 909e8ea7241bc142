package web

import (
	"fmt"
	"time"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/views"
)

// ingestBehindAfter is the ingest lag the dashboard shows amber: a dead
// letter is normally stored within a second of arriving.
const ingestBehindAfter = time.Minute

// ingestLagView is the dashboard's line on ingest: how many dead letters
// wait in the streams to be stored, since when, and whether it stalled.
// The figures cover every tenant (one stream holds them all) and say only
// how many, never whose. To a reader who does not read every tenant
// (everyTenant false) they are other tenants' volume, and nothing that
// reader can act on: the line then says only whether ingest is up to
// date, behind or stalled, why in words without counts or ages, and which
// stream limit the backlog nears without how near (scopedIngestLag).
func ingestLagView(h dlq.IngestHealth, now time.Time, everyTenant bool) views.IngestLagView {
	var v views.IngestLagView
	for _, st := range h.Streams {
		if st.CheckedAt.IsZero() {
			continue
		}
		v.Known = true
		v.Waiting += int64(st.Waiting())
		if st.Lag(now) > 0 && (v.Oldest.IsZero() || st.OldestAt.Before(v.Oldest)) {
			v.Oldest = st.OldestAt
		}
		if v.CheckedAt.IsZero() || st.CheckedAt.Before(v.CheckedAt) {
			v.CheckedAt = st.CheckedAt
		}
	}
	v.Behind = !v.Oldest.IsZero() && now.Sub(v.Oldest) > ingestBehindAfter
	if !everyTenant {
		return scopedIngestLag(v, h, now)
	}
	v.Stalled = h.Stalled(now)
	v.Limits = h.LimitWarnings(now)
	return v
}

// scopedIngestLag is v for a reader of some tenants: no count, no age, no
// share of a limit. Each reason is said once, however many streams have it.
func scopedIngestLag(v views.IngestLagView, h dlq.IngestHealth, now time.Time) views.IngestLagView {
	v.Scoped, v.Waiting, v.Oldest = true, 0, time.Time{}
	var drift, unchecked, stuck bool
	for _, st := range h.Streams {
		drift = drift || st.ConsumerDrift != "" || st.StreamDrift != ""
		age, bytes := st.LimitRisk(now)
		if age >= dlq.LimitWarnAt {
			v.Limits = append(v.Limits, fmt.Sprintf("%s: dead letters not yet stored near the stream's age limit (%s); past it JetStream discards them",
				st.Stream, st.MaxAge))
		}
		if bytes >= dlq.LimitWarnAt {
			v.Limits = append(v.Limits, fmt.Sprintf("%s: dead letters not yet stored near the stream's size limit (%d bytes); past it JetStream discards the oldest",
				st.Stream, st.MaxBytes))
		}
	}
	for _, st := range h.StalledStreams(now) {
		unchecked = unchecked || !st.FailingSince.IsZero()
		stuck = stuck || st.FailingSince.IsZero()
	}
	if stuck {
		v.Stalled = append(v.Stalled, "no dead letter has been stored for a while though some wait; the newest may be missing from the list")
	}
	if unchecked {
		v.Stalled = append(v.Stalled, "the ingest consumer could not be checked for a while (the log says why)")
	}
	if drift {
		v.Stalled = append(v.Stalled, "the DLQ stream's or its ingest consumer's settings were changed by hand, so dead letters may not be stored")
	}
	return v
}
