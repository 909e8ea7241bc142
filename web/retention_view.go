package web

import (
	"time"

	"context"
	"slices"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/views"
)

// retentionView is the policy's retention as people read it: every rule
// when tenants is nil (a caller who sees every tenant), else the rules for
// any tenant ("*") or one of tenants (the dashboard, the policy page), and
// the defaults. Pass an empty, not nil, slice for a caller of no tenant.
func retentionView(t *replaypolicy.Table, tenants []string) views.RetentionView {
	if t == nil {
		return views.RetentionView{Statuses: replaypolicy.RetentionStatuses}
	}
	return retentionLines(t.Retention(), tenants)
}

// retentionLines is retentionView of retention terms ret.
func retentionLines(ret *replaypolicy.Retention, tenants []string) views.RetentionView {
	r := views.RetentionView{Statuses: replaypolicy.RetentionStatuses}
	for _, l := range ret.Lines() {
		if tenants != nil && l.Tenant != "*" && !slices.Contains(tenants, l.Tenant) {
			continue
		}
		row := views.RetentionRow{Tenant: l.Tenant, ItemType: l.ItemType}
		for _, k := range l.Keep {
			row.Keep = append(row.Keep, k.String())
		}
		r.Lines = append(r.Lines, row)
	}
	return r
}

// activeRetention is the dashboard's retention for tenants: the terms in
// force (active, read with the dashboard), never merely this console's
// own, which another process may have replaced (its keeper then removes
// nothing). While they are its own, its table says what they are, with
// no round trip; otherwise what the database recorded of the active ones
// is read, as the Policy page reads it (activeTerms), and the view says
// they are not its own, or that what they say is not recorded. shortest
// is the terms' shortest period (Forever when none is known).
func (s *Server) activeRetention(ctx context.Context, active dlq.TermsActivation, tenants []string) (views.RetentionView, replaypolicy.Keep, error) {
	t := s.deps.Replays.Policy()
	own := ""
	if t != nil {
		own = replay.RetentionVersion(t.Retention())
	}
	shortest := replaypolicy.Keep{Forever: true}
	if !active.Stale(own) {
		if t != nil {
			shortest = t.Retention().Shortest()
		}
		return retentionView(t, tenants), shortest, nil
	}
	v, err := s.deps.Replays.TermsContent(ctx, active.Version)
	if err != nil {
		return views.RetentionView{}, shortest, err
	}
	r := views.RetentionView{Statuses: replaypolicy.RetentionStatuses, NotRecorded: true}
	if v.Retention != nil {
		r = retentionLines(v.Retention, tenants)
		shortest = v.Retention.Shortest()
	}
	r.NotOwn = true
	return r, shortest, nil
}

// storageView is where the dead letters are: the partitions of the
// snapshot and the DLQ stream as ingest last checked it, with the
// DLQ_MAX_AGE setting (setting) it is held to.
func storageView(snap *dlq.CountersSnapshot, h dlq.IngestHealth, stream string, setting time.Duration, shortest replaypolicy.Keep) views.StorageView {
	var v views.StorageView
	if snap != nil && len(snap.Partitions) > 0 {
		v.Partitions = len(snap.Partitions)
		v.FirstDay, v.LastDay = snap.Partitions[0].Day, snap.Partitions[len(snap.Partitions)-1].Day
	}
	for _, s := range h.Streams {
		if s.Stream != stream || s.CheckedAt.IsZero() {
			continue
		}
		v.Stream = views.StreamView{Known: true, Name: s.Stream, Bytes: int64(s.Bytes), MaxBytes: s.MaxBytes, MaxAge: s.MaxAge, Setting: setting}
		if !shortest.Forever {
			v.Stream.Shortest = shortest.For
		}
		if s.Msgs > 0 {
			v.Stream.FirstAt = s.FirstAt
		}
	}
	return v
}
