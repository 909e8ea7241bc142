package authz

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// mappingBeat is how often a running process says again which mapping it
// grants by; mappingAlive is how lately a mapping must have been seen to
// be taken as some running process's (a process that stopped, or was
// restarted with another mapping, ages out after it).
const (
	mappingBeat  = time.Minute
	mappingAlive = 3 * mappingBeat
)

// seeMapping records that a process (seen_by: $2) runs with mapping $1
// now, and returns the other mappings seen within $3 seconds, latest
// first. The CTE's insert is not visible to the SELECT: the other rows
// are read as they were.
const seeMapping = `
WITH mine AS (
    INSERT INTO authz_group_mappings AS m (fingerprint, seen_by) VALUES ($1, $2)
    ON CONFLICT (fingerprint) DO UPDATE SET last_seen = now(), seen_by = $2
)
SELECT fingerprint, last_seen, seen_by FROM authz_group_mappings
WHERE fingerprint <> $1 AND last_seen > now() - make_interval(secs => $3)
ORDER BY last_seen DESC`

// MappingWatch keeps this process's group-role mapping (GroupMap
// .Fingerprint) in the database while it runs (authz_group_mappings,
// migration 0053), and says when a running process grants by another:
// the mapping is a setting of each process (docs/access.md, "Group
// mappings are settings"), and a replica or worker rolled with another
// one grants other roles to the same groups until it is restarted.
// quarantine_authz_group_mappings_other counts the other mappings seen
// within mappingAlive (0: every running process grants alike).
type MappingWatch struct {
	pool        *pgxpool.Pool
	fingerprint string
	by          string
	log         *slog.Logger
	others      prometheus.Gauge
	// warned are the other mappings warned of while they stay in use.
	warned map[string]bool
}

// NewMappingWatch records groups as the mapping of this process (by: its
// kind and host, for the log line of others), registers its gauge on reg
// (when not nil), and logs a WARN for each other mapping seen within
// mappingAlive: some running process grants by it. Run keeps it up to
// date. It returns the error of the first record (the schema, the role's
// rights, PostgreSQL out of reach).
func NewMappingWatch(ctx context.Context, pool *pgxpool.Pool, groups GroupMap, by string, reg prometheus.Registerer, log *slog.Logger) (*MappingWatch, error) {
	w := &MappingWatch{pool: pool, fingerprint: groups.Fingerprint(), by: by, log: log, warned: map[string]bool{},
		others: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "quarantine_authz_group_mappings_other",
			Help: "Group-role mappings (AUTHZ_GROUP_PREFIX, AUTHZ_GROUP_ROLES) other than this process's that a running console process has reported within the last 3 minutes: above 0, processes grant different roles to the same groups (a rollout under way, or one left behind).",
		})}
	if reg != nil {
		reg.MustRegister(w.others)
	}
	if _, err := w.see(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

// otherMapping is a mapping another process reported.
type otherMapping struct {
	fingerprint, seenBy string
	lastSeen            time.Time
}

// see records this process's mapping now, sets the gauge, logs a WARN
// for each other mapping seen within mappingAlive that it did not warn of
// the last time, and returns them.
func (w *MappingWatch) see(ctx context.Context) ([]otherMapping, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rows, err := w.pool.Query(ctx, seeMapping, w.fingerprint, w.by, mappingAlive.Seconds())
	if err != nil {
		return nil, fmt.Errorf("record the group-role mapping: %w", err)
	}
	others, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (otherMapping, error) {
		var o otherMapping
		return o, row.Scan(&o.fingerprint, &o.lastSeen, &o.seenBy)
	})
	if err != nil {
		return nil, fmt.Errorf("record the group-role mapping: %w", err)
	}
	w.others.Set(float64(len(others)))
	warned := make(map[string]bool, len(others))
	for _, o := range others {
		warned[o.fingerprint] = true
		if !w.warned[o.fingerprint] {
			w.log.Warn("group-role mapping differs from one a running process grants by: until every serve replica and worker runs with the same AUTHZ_GROUP_PREFIX and AUTHZ_GROUP_ROLES, the same groups get different roles depending on the process (docs/access.md, 'Group mappings are settings')",
				"fingerprint", w.fingerprint, "other_fingerprint", o.fingerprint, "other_seen_by", o.seenBy, "other_seen_at", o.lastSeen)
		}
	}
	w.warned = warned
	return others, nil
}

// Run says again every mappingBeat that this process runs with its
// mapping, and updates the gauge, until ctx ends. Another mapping that
// comes into use is logged at WARN, as at start; a failed record is logged
// and leaves the gauge as it was.
func (w *MappingWatch) Run(ctx context.Context) {
	t := time.NewTicker(mappingBeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := w.see(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn("recording the group-role mapping failed; will retry", "err", err, "retry_in", mappingBeat)
		}
	}
}
