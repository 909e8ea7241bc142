package dlqdemo

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/quarantine-console/quarantine/dlq"
)

// FillConfig says how many dead letters Fill writes and what they look like.
type FillConfig struct {
	// Rows is how many dead letters to write, 1 to 10,000,000.
	Rows int
	// Tenants default to acme, globex and initech.
	Tenants []string
	// Now is the end of the time span (default time.Now()); Span its length
	// (default 30 days). Arrival times rise with the row number, with bursts.
	Now  time.Time
	Span time.Duration
	// Seed makes the data reproducible; 0 means 1.
	Seed uint64
	// ChunkRows is how many rows one COPY statement writes (default 50,000).
	ChunkRows int
	Log       *slog.Logger
}

// FillStats says what Fill did.
type FillStats struct {
	Rows    int
	Elapsed time.Duration
}

// FillStream is the source_stream of the rows Fill writes, so they never
// collide with ingested ones.
const FillStream = "DEMO_FILL"

// MaxFillRows is the most rows one Fill writes.
const MaxFillRows = 10_000_000

// bulkRows is the size from which a fill into an empty table builds the
// indexes after loading instead of during.
const bulkRows = 100_000

// dropIndexes drops the indexes of dead_letters that no constraint owns and
// returns their definitions, to run again after the load.
func dropIndexes(ctx context.Context, tx pgx.Tx) ([]string, error) {
	rows, err := tx.Query(ctx, `
        SELECT i.relname, pg_get_indexdef(i.oid) FROM pg_index x
        JOIN pg_class i ON i.oid = x.indexrelid
        WHERE x.indrelid = 'dead_letters'::regclass
          AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)
        ORDER BY i.relname`)
	if err != nil {
		return nil, fmt.Errorf("list indexes: %w", err)
	}
	var names, defs []string
	var name, def string
	if _, err := pgx.ForEachRow(rows, []any{&name, &def}, func() error {
		names, defs = append(names, name), append(defs, def)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("list indexes: %w", err)
	}
	for _, n := range names {
		if _, err := tx.Exec(ctx, `DROP INDEX `+pgx.Identifier{n}.Sanitize()); err != nil {
			return nil, fmt.Errorf("drop index %s: %w", n, err)
		}
	}
	for i, def := range defs {
		// A partitioned table's index reads "ON ONLY": made again as it was,
		// on every partition.
		defs[i] = strings.Replace(def, " ON ONLY ", " ON ", 1)
	}
	return defs, nil
}

// Fill writes cfg.Rows realistic dead letters straight into dead_letters
// with COPY, in chunks, in one transaction, then vacuums and analyses the
// table. Into an empty table, from 100,000 rows, the indexes are built after
// the load (and the table is locked until it commits). The partitions of
// the span are made first; the rows are recorded for the counters in the
// same transaction (dlq.CountArrivals) and folded into them after it, so
// the depth counters, arrival counters and error groups are exactly right
// afterwards. The mix: several
// tenants, the five demo item types and a few more, every error class,
// about two hundred error groups of very unequal size with bursts, payloads
// from empty to over 64 KB (some binary, some truncated JSON), malformed
// rows, and hostile text (script tags, attribute breakers, javascript:
// URLs, invalid UTF-8 made safe the way ingest does).
func Fill(ctx context.Context, pool *pgxpool.Pool, cfg FillConfig) (FillStats, error) {
	if cfg.Rows < 1 || cfg.Rows > MaxFillRows {
		return FillStats{}, fmt.Errorf("fill: rows %d is not between 1 and %d", cfg.Rows, MaxFillRows)
	}
	if len(cfg.Tenants) == 0 {
		cfg.Tenants = []string{"acme", "globex", "initech"}
	}
	if cfg.Now.IsZero() {
		cfg.Now = time.Now()
	}
	if cfg.Span <= 0 {
		cfg.Span = 30 * 24 * time.Hour
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.ChunkRows <= 0 {
		cfg.ChunkRows = 50_000
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	start := time.Now()
	// Sequences continue past every row ever stored (ids only grow), and each
	// fill's rows name the fill's start in their delivery: keys never collide.
	var base int64
	if err := pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM dead_letters`).Scan(&base); err != nil {
		return FillStats{}, fmt.Errorf("fill: find the last row: %w", err)
	}
	var empty bool
	if err := pool.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM dead_letters)`).Scan(&empty); err != nil {
		return FillStats{}, fmt.Errorf("fill: %w", err)
	}
	g := newGenerator(cfg, base)
	var days []time.Time
	for at := cfg.Now.Add(-cfg.Span - 24*time.Hour); !at.After(cfg.Now.Add(24 * time.Hour)); at = at.Add(24 * time.Hour) {
		days = append(days, at)
	}
	if err := dlq.NewStore(pool).EnsurePartitions(ctx, days); err != nil {
		return FillStats{}, fmt.Errorf("fill: %w", err)
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// Into an empty table, building the indexes once at the end is several
		// times faster than maintaining them row by row. The indexes are
		// dropped and made again in this transaction: a failed fill leaves
		// them as they were. (It locks the table until the fill commits.)
		var rebuild []string
		if empty && cfg.Rows >= bulkRows {
			var err error
			if rebuild, err = dropIndexes(ctx, tx); err != nil {
				return err
			}
		}
		for done := 0; done < cfg.Rows; {
			n := min(cfg.ChunkRows, cfg.Rows-done)
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"dead_letters"}, fillColumns, &chunk{g: g, left: n}); err != nil {
				return fmt.Errorf("copy rows %d to %d: %w", done+1, done+n, err)
			}
			done += n
			cfg.Log.Info("fill", "rows", done, "of", cfg.Rows, "elapsed", time.Since(start).Round(time.Millisecond))
		}
		if len(rebuild) > 0 {
			if _, err := tx.Exec(ctx, `SET LOCAL maintenance_work_mem = '512MB'`); err != nil {
				return err
			}
		}
		for _, def := range rebuild {
			if _, err := tx.Exec(ctx, def); err != nil {
				return fmt.Errorf("rebuild index: %s: %w", def, err)
			}
			cfg.Log.Info("fill: index built", "index", def, "elapsed", time.Since(start).Round(time.Millisecond))
		}
		counted, err := dlq.CountArrivals(ctx, tx, base, FillStream)
		if err != nil {
			return err
		}
		if counted != int64(cfg.Rows) {
			return fmt.Errorf("counted %d new rows, wrote %d", counted, cfg.Rows)
		}
		return nil
	})
	if err != nil {
		return FillStats{}, fmt.Errorf("fill: %w", err)
	}
	if _, err := dlq.FoldCounters(ctx, pool); err != nil {
		return FillStats{}, fmt.Errorf("fill: %w", err)
	}
	// Index-only scans and good plans need the visibility map and statistics.
	for _, stmt := range []string{
		`VACUUM (ANALYZE) dead_letters`,
		`ANALYZE dead_letter_counts, dead_letter_arrivals, dead_letter_arrivals_minute, dead_letter_arrivals_tenant_hour, dead_letter_groups`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			return FillStats{Rows: cfg.Rows}, fmt.Errorf("fill: %s: %w", stmt, err)
		}
	}
	return FillStats{Rows: cfg.Rows, Elapsed: time.Since(start)}, nil
}

var fillColumns = []string{
	"tenant", "item_type", "subject", "original_subject", "msg_id", "msg_id_derived",
	"operation_id", "correlation_id", "principal", "consumer", "error", "error_class", "stack",
	"attempts", "first_failed_at", "last_failed_at", "dead_lettered_at", "received_at",
	"headers", "payload", "payload_sha256", "payload_size", "payload_unavailable",
	"fingerprint", "malformed", "malformed_reasons", "status", "version", "updated_at",
	"source_kind", "source_stream", "source_seq", "source_consumer", "advisory", "source_key", "delivery",
}

// chunk is a pgx.CopyFromSource of the generator's next left rows.
type chunk struct {
	g    *generator
	left int
	row  []any
}

func (c *chunk) Next() bool {
	if c.left == 0 {
		return false
	}
	c.left--
	c.row = c.g.next()
	return true
}

func (c *chunk) Values() ([]any, error) { return c.row, nil }
func (c *chunk) Err() error             { return nil }

// fillGroup is one error group: its item type, class, message template and
// stack; every row of it has the same fingerprint.
type fillGroup struct {
	itemType    string
	class       dlq.ErrorClass
	template    string // {id} {n} {email} {hex} are filled per row
	stack       string
	fingerprint string
	weight      float64
	consumer    string
}

// fillItemTypes are the demo's five item types and a few more.
var fillItemTypes = []string{
	"orders.refund", "email.send", "search.index_update", "analytics.event", "accounts.permission_grant",
	"orders.cancel", "billing.invoice_create", "inventory.reserve", "webhooks.deliver", "email.digest",
}

// fillMessages are error templates per class. Words without digits make
// groups; {id}, {n}, {email}, {hex} and quoted values vary per row and are
// normalised away by the fingerprint.
var fillMessages = map[dlq.ErrorClass][]string{
	dlq.ClassTransient: {
		"{svc}: context deadline exceeded after {n}s",
		"dial tcp 10.0.{n}.{n}:5432: connect: connection refused ({svc})",
		"{svc}: 503 Service Unavailable, retry after {n}s",
		"{svc}: read: connection reset by peer",
		"nats: timeout waiting for ack from {svc}",
	},
	dlq.ClassPermanent: {
		"smtp: 550 5.1.1 <{email}>: recipient address rejected",
		"{svc}: customer {id} not found",
		"{svc}: card {id} declined: insufficient funds",
		"{svc}: 410 Gone for webhook endpoint {id}",
	},
	dlq.ClassSchemaInvalid: {
		"decode {svc}: unexpected end of JSON input",
		`validate {svc}: field "amount_cents" must be positive, got {n}`,
		`decode {svc}: json: cannot unmarshal string into Go struct field .quantity of type int`,
		`validate {svc}: value "<script>alert(1)</script>" is not a valid currency`,
		`validate {svc}: subject "\"><img src=x onerror=alert(1)>" contains markup`,
	},
	dlq.ClassStaleVersion: {
		"index {svc}: version conflict for doc {id} (have {n}, got {n})",
		"{svc}: optimistic lock failed on {id}: row version {n} is older than {n}",
	},
	dlq.ClassUnknownEffect: {
		"refund {id}: payment gateway timed out after {n}s; refund state unknown",
		"{svc}: upstream closed the connection after the request was sent; outcome unknown for {id}",
	},
	dlq.ClassPolicy: {
		"grant billing:admin to {id}: principal user:{n} lacks accounts:grant ({svc})",
		"{svc}: tenant quota exceeded for {id}",
	},
	dlq.ClassMaxDeliveries: {
		"consumer {svc} gave up after {n} deliveries",
	},
	dlq.ClassTerminated: {
		"{svc}: unsupported payload version {n}; message terminated",
	},
	dlq.ClassUnclassified: {
		"panic: runtime error: invalid memory address or nil pointer dereference [{svc}]",
		"{svc}: unexpected status {n} from javascript:alert(document.cookie)",
	},
}

var fillServices = []string{
	"payments", "ledger", "mailer", "indexer", "collector", "iam", "inventory", "webhooks", "billing", "search",
	"checkout", "fulfilment", "notifier", "reporting", "catalog", "pricing", "shipping", "tax", "fraud", "crm",
}

var fillPackages = []string{"handler", "worker", "client", "store", "codec", "router", "retry", "sink"}
var fillFuncs = []string{"Handle", "Apply", "Send", "Decode", "Publish", "Commit", "Reserve", "Deliver", "Validate", "Process"}

// newFillGroups makes about two hundred groups with a skewed (Zipf-like)
// weight: a few big ones and a long tail.
func newFillGroups(r *rand.Rand) []fillGroup {
	classes := []dlq.ErrorClass{
		dlq.ClassTransient, dlq.ClassPermanent, dlq.ClassSchemaInvalid, dlq.ClassStaleVersion,
		dlq.ClassUnknownEffect, dlq.ClassPolicy, dlq.ClassMaxDeliveries, dlq.ClassTerminated, dlq.ClassUnclassified,
	}
	const n = 200
	out := make([]fillGroup, 0, n)
	seen := map[string]bool{}
	for i := 0; len(out) < n; i++ {
		class := classes[i%len(classes)]
		msgs := fillMessages[class]
		svc := fillServices[(i+i/len(fillServices))%len(fillServices)]
		g := fillGroup{
			itemType: fillItemTypes[r.IntN(len(fillItemTypes))],
			class:    class,
			template: strings.ReplaceAll(msgs[r.IntN(len(msgs))], "{svc}", svc),
			consumer: svc + "-worker",
		}
		pkg, fn := fillPackages[r.IntN(len(fillPackages))], fillFuncs[r.IntN(len(fillFuncs))]
		g.stack = fmt.Sprintf("goroutine {n} [running]:\n"+
			"github.com/acme/%s/internal/%s.(*%s).%s(0xc000{hex}, 0xc000{hex})\n\t/src/internal/%s/%s.go:{n} +0x{hex}\n"+
			"github.com/acme/%s/internal/%s.(*%s).dispatch(...)\n\t/src/internal/%s/dispatch.go:{n} +0x{hex}\n"+
			"github.com/acme/%s/internal/consumer.(*Loop).run(0xc000{hex})\n\t/src/internal/consumer/loop.go:{n} +0x{hex}\n"+
			"created by github.com/acme/%s/internal/consumer.Start in goroutine 1\n\t/src/internal/consumer/start.go:{n} +0x{hex}",
			svc, pkg, strings.ToUpper(pkg[:1])+pkg[1:], fn, pkg, pkg, svc, pkg, strings.ToUpper(pkg[:1])+pkg[1:], pkg, svc, svc)
		// The fingerprint of the template is the fingerprint of every row:
		// what varies is normalised away (TestFillFingerprints checks it).
		g.fingerprint = dlq.Fingerprint(g.class, fillText(g.template, r), fillText(g.stack, r))
		if seen[g.fingerprint] {
			continue
		}
		seen[g.fingerprint] = true
		g.weight = 1 / math.Pow(float64(len(out)+1), 1.1)
		out = append(out, g)
	}
	return out
}

// fillText fills a template's variable parts with random values.
func fillText(t string, r *rand.Rand) string {
	if !strings.Contains(t, "{") {
		return t
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(t, '{')
		if i < 0 {
			b.WriteString(t)
			return b.String()
		}
		j := strings.IndexByte(t[i:], '}')
		if j < 0 {
			b.WriteString(t)
			return b.String()
		}
		b.WriteString(t[:i])
		switch t[i+1 : i+j] {
		case "id":
			fmt.Fprintf(&b, "%s-%d", []string{"ord", "cus", "acct", "sku", "inv", "wh"}[r.IntN(6)], 10000+r.IntN(900000))
		case "n":
			b.WriteString(strconv.Itoa(1 + r.IntN(999)))
		case "email":
			fmt.Fprintf(&b, "customer%d@example.com", r.IntN(50000))
		case "hex":
			fmt.Fprintf(&b, "%x", 0x100+r.IntN(0xfffff))
		default:
			b.WriteString(t[i : i+j+1])
		}
		t = t[i+j+1:]
	}
}

// incident is a burst: for a while one group arrives far more often.
type incident struct {
	from, to time.Time
	group    int
}

type generator struct {
	cfg       FillConfig
	r         *rand.Rand
	groups    []fillGroup
	weights   []float64 // cumulative group weights
	incidents []incident
	i         int64  // rows made
	base      int64  // source_seq before the first row
	run       string // when this fill started, in every row's delivery
	start     time.Time
	cum       []float64 // cumulative arrival weight per minute of the span
	large     []byte    // a compressible JSON array of > 64 KB, cut per row
}

func newGenerator(cfg FillConfig, base int64) *generator {
	r := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	g := &generator{cfg: cfg, r: r, base: base, start: cfg.Now.Add(-cfg.Span), run: time.Now().UTC().Format(time.RFC3339Nano)}
	// The groups are the same whatever the seed: fills add to the same world.
	g.groups = newFillGroups(rand.New(rand.NewPCG(1, 2)))
	var sum float64
	for _, gr := range g.groups {
		sum += gr.weight
		g.weights = append(g.weights, sum)
	}
	for k := range 12 {
		from := g.start.Add(time.Duration(r.Int64N(int64(cfg.Span))))
		if k == 0 { // an incident going on right now
			from = cfg.Now.Add(-40 * time.Minute)
		}
		g.incidents = append(g.incidents, incident{from: from, to: from.Add(time.Duration(20+r.IntN(160)) * time.Minute), group: 5 + r.IntN(len(g.groups)-5)})
	}
	g.arrivalCurve()
	var b strings.Builder
	b.WriteString(`{"batch":[`)
	for k := 0; b.Len() < 300<<10; k++ {
		if k > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"event":"page_view","user":"u%d","path":"/catalog/item/%d","ms":%d}`, k%977, k%4999, k%300)
	}
	b.WriteString(`]}`)
	g.large = []byte(b.String())
	return g
}

// arrivalCurve weighs every minute of the span: busier in the (UTC)
// afternoon than at night, and three to five times busier during incidents,
// so that the arrivals chart looks like a real one.
func (g *generator) arrivalCurve() {
	minutes := max(1, int(g.cfg.Span/time.Minute))
	g.cum = make([]float64, minutes)
	var sum float64
	for m := range minutes {
		at := g.start.Add(time.Duration(m) * time.Minute)
		hour := float64(at.UTC().Hour()) + float64(at.UTC().Minute())/60
		w := 1 + 0.6*math.Sin(2*math.Pi*(hour-9)/24)
		for _, in := range g.incidents {
			if !at.Before(in.from) && at.Before(in.to) {
				w += 3
			}
		}
		sum += w
		g.cum[m] = sum
	}
}

// timeAt spreads the rows over the span along the arrival curve, in order.
func (g *generator) timeAt(i int64) time.Time {
	x := (float64(i) - 0.5) / float64(g.cfg.Rows) * g.cum[len(g.cum)-1]
	m := sort.SearchFloat64s(g.cum, x)
	m = min(m, len(g.cum)-1)
	lo := 0.0
	if m > 0 {
		lo = g.cum[m-1]
	}
	frac := (x - lo) / (g.cum[m] - lo)
	return g.start.Add(time.Duration(m)*time.Minute + time.Duration(frac*float64(time.Minute)))
}

func (g *generator) pickGroup(at time.Time) int {
	for _, in := range g.incidents {
		if !at.Before(in.from) && at.Before(in.to) && g.r.IntN(10) < 6 {
			return in.group
		}
	}
	x := g.r.Float64() * g.weights[len(g.weights)-1]
	lo, hi := 0, len(g.weights)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if g.weights[mid] < x {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// next returns the values of the next row, in fillColumns order.
func (g *generator) next() []any {
	r := g.r
	g.i++
	seq := g.base + g.i
	at := g.timeAt(g.i)
	if at.After(g.cfg.Now) {
		at = g.cfg.Now
	}
	at = at.Truncate(time.Microsecond)
	gi := g.pickGroup(at)
	gr := &g.groups[gi]
	tenant := g.cfg.Tenants[int(seq)%len(g.cfg.Tenants)]
	if gi%4 == 1 { // some groups belong mostly to one tenant
		tenant = g.cfg.Tenants[gi%len(g.cfg.Tenants)]
	}
	itemType := gr.itemType
	errText := fillText(gr.template, r)
	stack := fillText(gr.stack, r)
	class := gr.class
	fingerprint := gr.fingerprint

	msgID := fmt.Sprintf("%s-%x-%d", strings.ReplaceAll(itemType, ".", "-"), r.Uint32(), seq)
	derived := r.IntN(10) == 0
	if derived {
		// as ingest names an id-less original: where its stream stored it
		// and when (some time before it first failed)
		msgID = dlq.DerivedMsgID(strings.ToUpper(strings.SplitN(itemType, ".", 2)[0]), uint64(1000000+seq), at.Add(-10*time.Minute))
	}
	opID := ""
	if strings.HasPrefix(itemType, "email.") || strings.HasPrefix(itemType, "orders.") || r.IntN(4) == 0 {
		opID = fmt.Sprintf("op_%x", r.Uint64())
	}
	corrID := fmt.Sprintf("req-%08x", r.Uint32())
	principal := ""
	if strings.HasPrefix(itemType, "accounts.") || strings.HasPrefix(itemType, "billing.") {
		principal = fmt.Sprintf("user:%d", r.IntN(400))
	}
	origSubject := "app." + tenant + "." + itemType
	var reasons []string
	switch k := r.IntN(1000); {
	case k < 4: // hostile values where people look
		corrID = `"><img src=x onerror=alert(1)>`
		principal = "javascript:alert(document.cookie)"
		origSubject = "javascript:alert(1)"
	case k < 12:
		origSubject = ""
		reasons = append(reasons, dlq.HeaderOriginalSubject+" is missing: the message cannot be replayed")
	case k < 40 && gi%25 == 3: // a producer that sends a class the contract lacks
		class = dlq.ClassUnclassified
		reasons = append(reasons, dlq.HeaderErrorClass+` "fatal" is not one of transient, permanent, schema_invalid, stale_version, unknown_effect, policy`)
		fingerprint = dlq.Fingerprint(class, errText, stack)
	case k < 80 && gi%25 == 5: // invalid UTF-8 in the error, made safe as ingest does
		errText = dlq.CleanText(errText + " \xff\xfe\xc3(bytes)")
		reasons = append(reasons, dlq.HeaderError+" is not valid UTF-8 text; shown with replacement characters, kept exactly in the raw headers")
		fingerprint = dlq.Fingerprint(class, errText, stack)
	}

	attempts := int32(1 + r.IntN(8))
	if class == dlq.ClassMaxDeliveries {
		attempts = 4
	}
	first := at.Add(-time.Duration(attempts) * time.Duration(1+r.IntN(30)) * time.Second)
	last := at.Add(-time.Duration(r.IntN(900)) * time.Millisecond)
	received := at.Add(time.Duration(2+r.IntN(400)) * time.Millisecond)

	payload := g.payload(itemType, tenant, seq)
	sum := sha256.Sum256(payload)
	kind, stream, consumer := dlq.SourceDLQ, FillStream, ""
	var advisory []byte
	if class == dlq.ClassMaxDeliveries || class == dlq.ClassTerminated {
		kind, consumer = dlq.SourceAdvisory, gr.consumer
		advisory = fmt.Appendf(nil, `{"type":"io.nats.jetstream.advisory.v1.max_deliver","stream":"%s","consumer":"%s","stream_seq":%d,"deliveries":%d}`,
			strings.ToUpper(strings.SplitN(itemType, ".", 2)[0]), gr.consumer, seq, attempts)
	}
	unavailable := kind == dlq.SourceAdvisory && r.IntN(20) == 0
	if unavailable {
		payload, sum = []byte{}, sha256.Sum256(nil)
	}

	delivery := fmt.Sprintf("%s #%d filled %s", stream, seq, g.run)
	key := dlq.SourceKey(delivery)
	status, version, updated := g.status(at, received)
	headers := fillHeaders(msgID, opID, corrID, principal, origSubject, errText, string(class), stack, gr.consumer, attempts, first, last, itemType, tenant, reasons)
	if reasons == nil {
		reasons = []string{}
	}
	var adv any
	if advisory != nil {
		adv = advisory
	}
	return []any{
		tenant, itemType, "dlq." + tenant + "." + itemType, origSubject, msgID, derived,
		opID, corrID, principal, gr.consumer, errText, string(class), stack,
		attempts, first, last, at, received,
		headers, payload, sum[:], int32(len(payload)), unavailable,
		fingerprint, len(reasons) > 0, reasons, string(status), version, updated,
		kind, stream, seq, consumer, adv, key[:], delivery,
	}
}

// status: old dead letters were mostly dealt with, recent ones mostly not.
func (g *generator) status(at, received time.Time) (dlq.Status, int32, time.Time) {
	age := g.cfg.Now.Sub(at)
	k := g.r.IntN(100)
	switch {
	case age > 7*24*time.Hour && k < 55:
		return []dlq.Status{dlq.StatusReplayed, dlq.StatusResolved, dlq.StatusDiscarded}[k%3], 2, received.Add(time.Duration(1+k) * time.Hour)
	case age > 24*time.Hour && k < 20:
		return []dlq.Status{dlq.StatusReplayed, dlq.StatusDiscarded, dlq.StatusReplayFailed, dlq.StatusResolved}[k%4], 2, received.Add(time.Duration(1+k) * time.Minute)
	case k < 3:
		return []dlq.Status{dlq.StatusReplayRequested, dlq.StatusReplaying, dlq.StatusReplayFailed}[k], 2, received.Add(time.Minute)
	}
	return dlq.StatusQuarantined, 1, received
}

// payload: JSON mostly, some empty, some binary, some truncated, a few
// over 64 KB, some with hostile strings.
func (g *generator) payload(itemType, tenant string, seq int64) []byte {
	r := g.r
	switch k := r.IntN(10000); {
	case k < 3:
		n := 70<<10 + r.IntN(200<<10)
		return g.large[:min(n, len(g.large))] // cut: large and, past the end, truncated JSON
	case k < 100:
		b := make([]byte, 16+r.IntN(2000))
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		b[0], b[1] = 0x1f, 0x8b // looks like gzip
		return b
	case k < 150:
		return []byte{}
	case k < 180:
		return fmt.Appendf(nil, "order,%d,%s,EUR,%d.%02d\n", seq, tenant, r.IntN(500), r.IntN(100))
	}
	var v map[string]any
	switch strings.SplitN(itemType, ".", 2)[0] {
	case "orders":
		v = map[string]any{"order_id": fmt.Sprintf("ord-%d", seq), "amount_cents": 500 + r.IntN(90000), "currency": "EUR",
			"reason": "damaged in transit", "lines": fillLines(r)}
	case "email":
		subject := "Your receipt"
		if r.IntN(50) == 0 {
			subject = `<script>alert("owned")</script> "><img src=x onerror=alert(1)>`
		}
		v = map[string]any{"to": fmt.Sprintf("customer%d@example.com", r.IntN(50000)), "template": "receipt", "subject": subject,
			"locale": "de-DE", "vars": map[string]any{"name": "Ada", "link": "javascript:alert(1)"}}
	case "search":
		v = map[string]any{"index": "products", "doc_id": fmt.Sprintf("sku-%d", r.IntN(20000)), "version": seq,
			"fields": map[string]any{"title": "Espresso machine", "price_cents": 19900 + r.IntN(50000), "tags": []string{"kitchen", "coffee"}}}
	case "analytics":
		v = map[string]any{"event": "page_view", "user": fmt.Sprintf("u%d", r.IntN(80000)), "path": "/checkout", "ts": g.start.Add(time.Duration(seq) * time.Second).UTC()}
	case "accounts":
		v = map[string]any{"account": fmt.Sprintf("acct-%d", r.IntN(3000)), "grant": "billing:admin", "requested_by": fmt.Sprintf("user:%d", r.IntN(400))}
	default:
		v = map[string]any{"id": fmt.Sprintf("%s-%d", tenant, seq), "attempt": 1 + r.IntN(5), "lines": fillLines(r)}
	}
	b, _ := json.Marshal(v) // maps of plain values always marshal
	if r.IntN(40) == 0 {
		b = b[:len(b)/2] // a producer bug: truncated JSON
	}
	return b
}

func fillLines(r *rand.Rand) []map[string]any {
	lines := make([]map[string]any, 1+r.IntN(12))
	for i := range lines {
		lines[i] = map[string]any{"sku": fmt.Sprintf("sku-%d", r.IntN(20000)), "qty": 1 + r.IntN(4), "price_cents": 100 + r.IntN(20000)}
	}
	return lines
}

// fillHeaders writes the headers as ingest stores them: every header of the
// DLQ message, sorted by name; values that are not valid UTF-8 in base64.
func fillHeaders(msgID, opID, corrID, principal, origSubject, errText, class, stack, consumer string, attempts int32,
	first, last time.Time, itemType, tenant string, reasons []string) []byte {
	hs := []dlq.HeaderValue{
		{Name: "Content-Type", Value: "application/json"},
		{Name: dlq.HeaderAttempts, Value: strconv.Itoa(int(attempts))},
		{Name: dlq.HeaderConsumer, Value: consumer},
	}
	if corrID != "" {
		hs = append(hs, dlq.HeaderValue{Name: dlq.HeaderCorrelationID, Value: corrID})
	}
	errValue := dlq.HeaderValue{Name: dlq.HeaderError, Value: dlq.EscapeLines(errText)}
	if strings.ContainsRune(errText, '\uFFFD') {
		errValue = dlq.HeaderValue{Name: dlq.HeaderError, Value: base64.StdEncoding.EncodeToString([]byte(strings.ReplaceAll(errText, "\uFFFD", "\xff"))), Encoding: "base64"}
	}
	hs = append(hs, errValue)
	if len(reasons) > 0 && strings.HasPrefix(reasons[0], dlq.HeaderErrorClass) {
		class = "fatal"
	}
	hs = append(hs,
		dlq.HeaderValue{Name: dlq.HeaderErrorClass, Value: class},
		dlq.HeaderValue{Name: dlq.HeaderFirstFailedAt, Value: first.UTC().Format(time.RFC3339Nano)},
		dlq.HeaderValue{Name: dlq.HeaderItemType, Value: itemType},
		dlq.HeaderValue{Name: dlq.HeaderLastFailedAt, Value: last.UTC().Format(time.RFC3339Nano)},
	)
	if opID != "" {
		hs = append(hs, dlq.HeaderValue{Name: dlq.HeaderOperationID, Value: opID})
	}
	hs = append(hs, dlq.HeaderValue{Name: dlq.HeaderOriginalMsgID, Value: msgID})
	if origSubject != "" {
		hs = append(hs, dlq.HeaderValue{Name: dlq.HeaderOriginalSubject, Value: origSubject})
	}
	if principal != "" {
		hs = append(hs, dlq.HeaderValue{Name: dlq.HeaderPrincipal, Value: principal})
	}
	hs = append(hs,
		dlq.HeaderValue{Name: dlq.HeaderStack, Value: dlq.EscapeLines(stack)},
		dlq.HeaderValue{Name: dlq.HeaderTenant, Value: tenant},
		dlq.HeaderValue{Name: "Nats-Msg-Id", Value: "dlq:" + consumer + ":" + msgID},
		dlq.HeaderValue{Name: "Traceparent", Value: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
	)
	b, _ := json.Marshal(hs) // plain strings always marshal
	return b
}

// ErrRealDeadLetters is returned by CheckFillable for a database holding
// dead letters a fill did not write.
var ErrRealDeadLetters = errors.New("the database holds dead letters console demo --rows did not write")

// A row not of a fill. No index leads with source_stream: the scan stops at
// the first such row, and reads the whole table only when every row is a
// fill's: one sequential pass, before a fill that writes far more. A
// database not yet migrated has no dead letters.
const selectUnfilled = `SELECT EXISTS (SELECT 1 FROM dead_letters WHERE source_stream <> $1)`

// CheckFillable returns an error wrapping ErrRealDeadLetters when the
// database on pool holds a dead letter Fill did not write (source_stream
// other than FillStream): fake dead letters among real ones would be
// listed, counted, grouped and replayable with them, under real tenants'
// names. An empty or unmigrated database, or one of fills alone, passes.
func CheckFillable(ctx context.Context, pool *pgxpool.Pool) error {
	var found bool
	err := pool.QueryRow(ctx, selectUnfilled, FillStream).Scan(&found)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" { // undefined_table
		return nil
	}
	if err != nil {
		return fmt.Errorf("look for dead letters not of a fill: %w", err)
	}
	if found {
		return fmt.Errorf("%w: its fake dead letters would be shown, counted and replayable among them; fill a database of its own", ErrRealDeadLetters)
	}
	return nil
}
