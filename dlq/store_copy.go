package dlq

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"
)

// A batch is stored in one transaction (copyBatch): its ids are taken from
// the identity sequence of dead_letters (copyIDs), its rows written with
// COPY in PostgreSQL's binary format (encodeCopy: no statement to plan, no
// parameter arrays to unnest, no RETURNING), and its deltas for the
// counters, added up here from the very values copied, inserted beside them
// (copyDeltas), so the counters change in the transaction that stores the
// rows. COPY names the ids (COPY always takes a value given for an identity
// column, GENERATED ALWAYS or not) because the deltas keep a sample id per
// group: ids from the sequence are as unique as the ones a plain insert
// draws from it, and given in the batch's order as an insert gives them
// (the last record stored is the newest), while the rows go in the source
// key's order (byKey). A COPY that meets a stored source key (a redelivery) is
// refused whole; the batch then goes again without the records already
// stored (unstoredOnly), as often as the source key keeps refusing it and
// each time with fewer records (another ingester may store the same
// redelivery meanwhile).

// ingestStatus is the status every new dead letter has: COPY writes it,
// and the deltas count the rows under it.
const ingestStatus = string(StatusQuarantined)

// copyColumns are the columns COPY writes, in the order encodeCopy
// encodes them.
const copyColumns = `id, tenant, item_type, subject, original_subject, msg_id, msg_id_derived,
    operation_id, correlation_id, principal, consumer, error, error_class, stack,
    attempts, first_failed_at, last_failed_at, dead_lettered_at,
    headers, header_block, payload, payload_sha256, payload_size, payload_unavailable,
    fingerprint, malformed, malformed_reasons, flags, status,
    source_kind, source_stream, source_seq, source_consumer, advisory, source_key, delivery, replay_of, generation`

const copyColumnCount = 38

const copyIn = `COPY dead_letters (` + copyColumns + `) FROM STDIN (FORMAT binary)`

// copyIDs draws n ids from the identity sequence of dead_letters (named
// so by migration 0016), in ascending order, each with whether $2, the
// batch's oldest dead_lettered_at, lies more than $3 seconds (purgeHorizon)
// before now on the database's clock: the clock retention judges by, which
// the ingester's own may lag.
const copyIDs = `SELECT nextval('dead_letters_id_seq'), $2::timestamptz < now() - make_interval(secs => $3)
FROM generate_series(1, $1) ORDER BY 1`

// errMayBePurged ends a batch stored without looking at the source keys
// (unstoredOnly false) that the database's clock says may hold a dead
// letter retention removed: it goes again, looking.
var errMayBePurged = errors.New("a dead letter of the batch may be one retention removed")

// storedKeys are the source keys among the batch's that are stored already
// (the unique index on dead_lettered_at and source_key answers), or were
// and retention removed them (dead_letters_purged's primary key answers):
// a message the stream delivers again after its dead letter was removed
// is not stored again. The sweep's proof by key asks it too
// (storedAlready). It reads only the partitions of the batch's days
// (d.dead_lettered_at = ANY($1): pruned when planned, which is on every
// call, unstored sending it as a simple query): a batch of other days does
// not wait for a day retention empties, whose partition the purge locks as
// TRUNCATE does until it commits (holdDay).
const storedKeys = `
WITH k AS (SELECT * FROM unnest($1::timestamptz[], $2::bytea[]) AS k(at, key))
SELECT d.dead_lettered_at, d.source_key FROM k JOIN dead_letters d ON d.dead_lettered_at = k.at AND d.source_key = k.key
WHERE d.dead_lettered_at = ANY($1::timestamptz[])
UNION ALL
SELECT p.dead_lettered_at, p.source_key FROM k JOIN dead_letters_purged p ON p.dead_lettered_at = k.at AND p.source_key = k.key`

// insertDeltas records the batch's deltas (one row per tenant, item type,
// class, error group and minute, added up by copyDeltas: "ins" here) and
// gives new combinations their counter row (newCombinations).
const insertDeltas = `
WITH ins AS (
    SELECT u.*, $11::text AS status
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::bigint[],
                $7::timestamptz[], $8::timestamptz[], $9::bigint[], $10::timestamptz[])
        AS u(tenant, item_type, error_class, fingerprint, minute, n, first_seen, last_seen, sample_id, sample_at)
), deltas AS (
    INSERT INTO dead_letter_deltas (tenant, item_type, error_class, status, fingerprint, minute, n,
        first_seen, last_seen, sample_id, sample_at)
    SELECT tenant, item_type, error_class, status, fingerprint, minute, n, first_seen, last_seen, sample_id, sample_at FROM ins
), ` + newCombinations + `
SELECT n FROM announce`

// copyRow is a record as COPY writes it: the values the insert derives
// for records made by hand (delivery and source key) filled in.
type copyRow struct {
	rec      *Record
	delivery string
	key      [32]byte
	id       int64 // drawn in copyBatch
	// otherDays: a delivery of its message may be kept under another day
	// (Record.mayBeKeptUnderAnotherDay), judged once, when the insert
	// began, so that every try of the batch looks the same up.
	otherDays bool
}

// copyRows returns recs as COPY writes them, judged at now.
func copyRows(recs []Record, now time.Time) []copyRow {
	rows := make([]copyRow, len(recs))
	for i := range recs {
		r := &recs[i]
		rows[i] = copyRow{rec: r, delivery: r.Delivery, key: r.SourceKey, otherDays: r.mayBeKeptUnderAnotherDay(now)}
		if r.Delivery == "" {
			// Made by hand (tests, tools): keyed by its source position, as
			// every row was before stream recreation was taken into account.
			rows[i].delivery = fmt.Sprintf("%s #%d consumer %s", r.SourceStream, r.SourceSeq, r.SourceConsumer)
			rows[i].key = SourceKey(rows[i].delivery)
		}
	}
	return rows
}

// byKey sorts rows in the order of the source key's unique index: two
// transactions storing the same redeliveries wait for each other's keys
// in one order, never in a circle (a deadlock).
func byKey(rows []copyRow) {
	slices.SortFunc(rows, func(a, b copyRow) int {
		return cmp.Or(cmp.Compare(pgMicros(a.rec.DeadLetteredAt), pgMicros(b.rec.DeadLetteredAt)), bytes.Compare(a.key[:], b.key[:]))
	})
}

// copyBatch stores rows in one transaction (see above) and returns them
// as inserted; with unstoredOnly, it leaves out the rows whose source key
// is stored, and repeats of a source key within rows, and reports how many
// it left out.
func (s *Store) copyBatch(ctx context.Context, rows []copyRow, unstoredOnly bool) ([]Inserted, int, error) {
	var in []Inserted
	skipped := 0
	err := s.inTx(ctx, func(tx boundedTx) (err error) {
		in, skipped, err = copyTx(ctx, tx, rows, unstoredOnly)
		return err
	})
	if err != nil {
		return nil, skipped, err
	}
	return in, skipped, nil
}

// copyTx is copyBatch's work in tx, each statement within the store's
// deadline (inTx).
func copyTx(ctx context.Context, tx boundedTx, rows []copyRow, unstoredOnly bool) ([]Inserted, int, error) {
	skipped := 0
	if unstoredOnly {
		var err error
		n := len(rows)
		if rows, err = unstored(ctx, tx, rows); err != nil {
			return nil, 0, err
		}
		skipped = n - len(rows)
	}
	if len(rows) == 0 {
		return nil, skipped, nil
	}
	oldest := rows[0].rec.DeadLetteredAt
	for _, r := range rows[1:] {
		if r.rec.DeadLetteredAt.Before(oldest) {
			oldest = r.rec.DeadLetteredAt
		}
	}
	idRows, err := tx.Query(ctx, copyIDs, len(rows), oldest, purgeHorizon.Seconds())
	if err != nil {
		return nil, skipped, fmt.Errorf("draw ids: %w", err)
	}
	var ids []int64
	var id int64
	var mayBePurged bool
	if _, err := pgx.ForEachRow(idRows, []any{&id, &mayBePurged}, func() error {
		ids = append(ids, id)
		return nil
	}); err != nil {
		return nil, skipped, fmt.Errorf("draw ids: %w", err)
	}
	if mayBePurged && !unstoredOnly {
		return nil, skipped, errMayBePurged
	}
	if len(ids) != len(rows) {
		return nil, skipped, fmt.Errorf("draw ids: %d for %d rows", len(ids), len(rows))
	}
	// Ids in the batch's order, as an insert gives them: the last
	// stored is the newest.
	for i := range rows {
		rows[i].id = ids[i]
	}
	sorted := slices.Clone(rows)
	byKey(sorted)
	buf := copyBuffers.Get().(*[]byte)
	defer putCopyBuffer(buf)
	data := encodeCopy((*buf)[:0], sorted)
	*buf = data
	cctx, cancel := tx.within(ctx)
	_, err = tx.Conn().PgConn().CopyFrom(cctx, bytes.NewReader(data), copyIn)
	cancel()
	if err != nil {
		return nil, skipped, err
	}
	if _, err := tx.Exec(ctx, insertDeltas, copyDeltas(rows)...); err != nil {
		return nil, skipped, fmt.Errorf("record the counters' deltas: %w", err)
	}
	in := make([]Inserted, len(rows))
	for i, r := range rows {
		in[i] = Inserted{Tenant: r.rec.Tenant, ItemType: r.rec.ItemType, ErrorClass: r.rec.ErrorClass,
			Malformed: r.rec.Malformed(), StoredAt: r.rec.storedAt}
	}
	return in, skipped, nil
}

// copyBuffers keep the COPY data of earlier batches for the next: a batch
// is megabytes.
var copyBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxKeptCopyBuffer is the largest COPY data copyBuffers keeps: the rare
// batch of huge dead letters is not held on to.
const maxKeptCopyBuffer = 64 << 20

func putCopyBuffer(buf *[]byte) {
	if cap(*buf) <= maxKeptCopyBuffer {
		copyBuffers.Put(buf)
	}
}

// keyAt is a source key with the time it is unique under, to the
// microsecond PostgreSQL keeps.
type keyAt struct {
	at  int64
	key [32]byte
}

// unstored returns the rows of rows whose source key is not stored (as
// tx sees it), each source key once. A row kept under the day it arrived
// (Record.keptUnderArrivalDay) is looked up under its stored time too (the
// one its delivery names, Record.storedAt): a delivery judged by a clock
// later than the replica's that judged this one (or before the replica's
// clock was set back) found that time within maxStoredAhead and kept its
// row under it (TestRevIngest22AheadClockStoredThenJudgedImplausibleNotStoredAgain).
// Such rows are rare; each adds one probe of one day's index.
func unstored(ctx context.Context, tx pgx.Tx, rows []copyRow) ([]copyRow, error) {
	ats, keys := make([]time.Time, 0, len(rows)), make([][]byte, 0, len(rows))
	for i := range rows {
		ats, keys = append(ats, rows[i].rec.DeadLetteredAt), append(keys, rows[i].key[:])
		if at, ok := rows[i].stampedAt(); ok {
			ats, keys = append(ats, at), append(keys, rows[i].key[:])
		}
	}
	seen := map[keyAt]bool{}
	if err := readStoredKeys(ctx, tx, ats, keys, func(at time.Time, key []byte) {
		k := keyAt{at: pgMicros(at)}
		copy(k.key[:], key)
		seen[k] = true
	}); err != nil {
		return nil, fmt.Errorf("look up stored source keys: %w", err)
	}
	kept, err := keptUnderADay(ctx, tx, rows)
	if err != nil {
		return nil, err
	}
	var keep []copyRow
	for _, r := range rows {
		k := keyAt{at: pgMicros(r.rec.DeadLetteredAt), key: r.key}
		// The same message twice in the batch, once judged by each side of
		// maxStoredAhead, is one row too: each is seen under both times.
		stamp, stamped := r.stampedAt()
		s := keyAt{at: pgMicros(stamp), key: r.key}
		if seen[k] || kept[r.key] || (stamped && seen[s]) {
			continue
		}
		seen[k] = true
		if stamped {
			seen[s] = true
		}
		keep = append(keep, r)
	}
	return keep, flagTrimmed(ctx, tx, keep)
}

// stampedAt is the stored time r's delivery names when r is kept under
// the day it arrived instead (Record.keptUnderArrivalDay), which unstored
// looks its key up under too; ok is false for any other row.
func (r copyRow) stampedAt() (at time.Time, ok bool) {
	if r.rec.storedAt.IsZero() || !r.rec.keptUnderArrivalDay() {
		return time.Time{}, false
	}
	return r.rec.storedAt, true
}

// readStoredKeys asks storedKeys of keys, each under its time in ats, and
// hands found each key stored (a row, or one retention kept) with its
// time. Planned with its values (a simple query), whatever the pool's
// plan_cache_mode: a generic plan would lock every partition. (pgx writes
// a time's text to the microsecond, truncated, as COPY's binary stores
// it: PostgreSQL rounds nothing.) unstored and the sweep's proof by key
// (storedAlready) read through it.
func readStoredKeys(ctx context.Context, q queryer, ats []time.Time, keys [][]byte, found func(at time.Time, key []byte)) error {
	rows, err := q.Query(ctx, storedKeys, pgx.QueryExecModeSimpleProtocol, ats, keys)
	if err != nil {
		return err
	}
	var at time.Time
	var key []byte
	_, err = pgx.ForEachRow(rows, []any{&at, &key}, func() error {
		found(at, key)
		return nil
	})
	return err
}

// keptUnderADay are the source keys of the rows whose message may have a
// delivery kept under another day (copyRow.otherDays: kept under the day
// they arrived, or stored more than farAhead ahead,
// Record.mayBeKeptUnderAnotherDay) that are stored under any day's
// midnight, or were and retention kept their keys (keptUnderAnyDay, by
// stream, as the sweep looks): a redelivery of such a message on a later
// day (a lost ack, a consumer made again from the stream's first message)
// is kept under that day
// (TestRevIngest18bResetClockRedeliveryOnALaterDayStoredAgain), and one
// that finds a stored time within maxStoredAhead which the first found
// beyond it under that time
// (TestRevIngest22AheadClockRedeliveryJudgedPlausibleStoredAgain), where
// the unique index does not find the first. Only such rows, rare, are
// looked up.
func keptUnderADay(ctx context.Context, tx pgx.Tx, rows []copyRow) (map[[32]byte]bool, error) {
	type batch struct {
		keys [][]byte
		seqs []int64
	}
	byStream := map[string]*batch{}
	for _, r := range rows {
		if !r.otherDays {
			continue
		}
		stream, seq, ok := deliveryPosition(r.delivery)
		if !ok {
			continue
		}
		b := byStream[stream]
		if b == nil {
			b = &batch{}
			byStream[stream] = b
		}
		b.keys, b.seqs = append(b.keys, r.key[:]), append(b.seqs, int64(seq))
	}
	kept := map[[32]byte]bool{}
	if len(byStream) == 0 {
		return kept, nil
	}
	if err := lockSourceKeys(ctx, tx, rows); err != nil {
		return nil, err
	}
	for stream, b := range byStream {
		if err := keptUnderAnyDay(ctx, tx, stream, b.keys, b.seqs, kept); err != nil {
			return nil, fmt.Errorf("look up source keys kept under another day: %w", err)
		}
	}
	return kept, nil
}

// sourceKeyLockSpace is the first key of the advisory locks of source
// keys looked up under other days (lockSourceKeys): "QSRC".
const sourceKeyLockSpace = 0x51535243

// lockSourceKeys takes, until tx ends, a lock of each source key of rows
// looked up under other days (copyRow.otherDays), in one order: two
// deliveries of one message kept under two days (one just before UTC
// midnight, its redelivery just after, in two ingesters) do not both miss
// the other's row, uncommitted, which the unique index, on
// (dead_lettered_at, source_key), does not see either. The second waits
// for the first's commit, then finds its row. A lock is of the key's
// first 32 bits: keys that share them wait for each other, nothing more.
func lockSourceKeys(ctx context.Context, tx pgx.Tx, rows []copyRow) error {
	var keys []int32
	for _, r := range rows {
		if r.otherDays {
			keys = append(keys, int32(binary.BigEndian.Uint32(r.key[:4])))
		}
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	if _, err := tx.Exec(ctx, `SELECT count(pg_advisory_xact_lock($1, k)) FROM (SELECT k FROM unnest($2::int[]) AS k ORDER BY k) s`,
		int32(sourceKeyLockSpace), keys); err != nil {
		return fmt.Errorf("lock source keys kept under another day: %w", err)
	}
	return nil
}

// selectTrimmed is, per stream and per time a trim was made, the highest
// sequence whose kept key the keeper removed then
// (dead_letters_purged_trims, migration 0030).
const selectTrimmed = `SELECT stream, trimmed_at, max(to_seq) FROM dead_letters_purged_trims WHERE stream = ANY($1) GROUP BY stream, trimmed_at`

// flagTrimmed flags the rows whose message lies where the keeper removed
// retention's kept keys: it removes them once the stream no longer holds
// those messages, so a row from there was delivered before and held past
// that (an ingester that could not store it for longer than the keeper's
// margin). It may be a dead letter retention removed, whose key no longer
// says so: it is stored, not dropped (it may as well never have been
// stored), and says what it may be. A row's message is the one its
// delivery names (deliveryPosition), as for the keys retention keeps and
// the keeper trims (keepDayKeys): for a captured advisory that is the
// advisory's, in the advisory stream, not the original's its row names.
func flagTrimmed(ctx context.Context, tx pgx.Tx, rows []copyRow) error {
	type position struct {
		stream string
		seq    uint64
	}
	at := make([]position, len(rows))
	var streams []string
	for i, r := range rows {
		stream, seq, ok := deliveryPosition(r.delivery)
		if !ok {
			continue // a key without a position is never trimmed
		}
		at[i] = position{stream, seq}
		if !slices.Contains(streams, stream) {
			streams = append(streams, stream)
		}
	}
	if len(streams) == 0 {
		return nil
	}
	found, err := tx.Query(ctx, selectTrimmed, streams)
	if err != nil {
		return fmt.Errorf("look up trimmed keys: %w", err)
	}
	type trim struct {
		at time.Time
		to uint64
	}
	trims := map[string][]trim{}
	var stream string
	var trimmedAt time.Time
	var to int64
	if _, err := pgx.ForEachRow(found, []any{&stream, &trimmedAt, &to}, func() error {
		trims[stream] = append(trims[stream], trim{at: trimmedAt, to: uint64(to)})
		return nil
	}); err != nil {
		return fmt.Errorf("look up trimmed keys: %w", err)
	}
	for i, r := range rows {
		pos := at[i]
		if pos.seq == 0 || slices.Contains(r.rec.Flags, FlagAfterKeyTrim) {
			continue
		}
		// Only a trim made after the stream stored the message covers it:
		// a message held from before a trim was stored before it, while a
		// stream made again under the same name numbers its new messages
		// from 1 again, after the old one's trims.
		for _, tr := range trims[pos.stream] {
			if pos.seq <= tr.to && r.rec.DeadLetteredAt.Before(tr.at) {
				r.rec.flag(FlagAfterKeyTrim, "stored after retention let go of what it kept of %s up to sequence %d (this one is %d): delivered before the stream let the message go and held longer than the keeper waits, it may be a dead letter retention removed earlier",
					pos.stream, tr.to, pos.seq)
				break
			}
		}
	}
	return nil
}

// deliveryPosition is the stream and sequence a delivery names
// ("<stream> #<seq> stored <time>", setDelivery), as the database's
// quarantine_delivery_position reads them for the keys retention keeps
// (migration 0028); ok is false for any other form (an unreadable
// delivery, a record made by hand), whose key names no position.
func deliveryPosition(delivery string) (stream string, seq uint64, ok bool) {
	stream, rest, found := strings.Cut(delivery, " #")
	if !found || stream == "" || strings.ContainsFunc(stream, unicode.IsSpace) {
		return "", 0, false
	}
	digits, _, found := strings.Cut(rest, " stored ")
	if !found || len(digits) == 0 || len(digits) > 18 || strings.ContainsFunc(digits, func(c rune) bool { return c < '0' || c > '9' }) {
		return "", 0, false
	}
	seq, err := strconv.ParseUint(digits, 10, 64)
	return stream, seq, err == nil
}

// FlagAfterKeyTrim flags a row flagTrimmed found; a replay leaves such a
// dead letter out (dlq/replay sendFacts), since it may be one retention
// removed after it was replayed or closed.
const FlagAfterKeyTrim = "after_retention_key_trim"

// copyDeltas adds rows (with their ids) up per tenant, item type, class, error
// group and minute, as the arguments of insertDeltas: how many, the first
// and last time, the highest id and its time. The minute is the one
// date_bin('1 minute', t, '2000-01-01') gives (minutes since the Unix
// epoch and since year 1 fall on the same instants).
func copyDeltas(rows []copyRow) []any {
	type key struct {
		tenant, itemType, class, fingerprint string
		minute                               int64
	}
	type sum struct {
		n                    int64
		first, last, sampleT int64
		sample               int64
	}
	order := []key{}
	sums := map[key]*sum{}
	for _, r := range rows {
		t := pgMicros(r.rec.DeadLetteredAt)
		k := key{r.rec.Tenant, r.rec.ItemType, string(r.rec.ErrorClass), r.rec.Fingerprint, floorDiv(t, 60_000_000)}
		s := sums[k]
		if s == nil {
			s = &sum{first: t, last: t, sample: r.id, sampleT: t}
			sums[k] = s
			order = append(order, k)
		}
		s.n++
		s.first, s.last = min(s.first, t), max(s.last, t)
		if r.id > s.sample {
			s.sample, s.sampleT = r.id, t
		}
	}
	n := len(order)
	tenant, itemType, class, fingerprint := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	minute, first, last, sampleAt := make([]time.Time, n), make([]time.Time, n), make([]time.Time, n), make([]time.Time, n)
	count, sample := make([]int64, n), make([]int64, n)
	for i, k := range order {
		s := sums[k]
		tenant[i], itemType[i], class[i], fingerprint[i] = k.tenant, k.itemType, k.class, k.fingerprint
		minute[i], count[i], first[i], last[i] = fromPGMicros(k.minute*60_000_000), s.n, fromPGMicros(s.first), fromPGMicros(s.last)
		sample[i], sampleAt[i] = s.sample, fromPGMicros(s.sampleT)
	}
	return []any{tenant, itemType, class, fingerprint, minute, count, first, last, sample, sampleAt, ingestStatus}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// pgEpoch is PostgreSQL's epoch (2000-01-01 UTC) in microseconds since
// the Unix epoch.
const pgEpoch = 946_684_800 * 1_000_000

// pgMicros is t as PostgreSQL stores it when pgx sends it: microseconds
// since 2000-01-01 UTC, the nanoseconds cut off.
func pgMicros(t time.Time) int64 {
	return t.Unix()*1_000_000 + int64(t.Nanosecond())/1000 - pgEpoch
}

func fromPGMicros(us int64) time.Time { return time.UnixMicro(us + pgEpoch).UTC() }

// Type OIDs the binary format names: the elements of text[].
const textOID = 25

// copyHeader starts binary COPY data: the signature, no flags, no
// extension.
var copyHeader = []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")

// encodeCopy writes rows, with their ids, as binary COPY data for
// copyColumns. Each value is encoded as the column's type receives it
// (text as its bytes, which PostgreSQL checks as for any statement: a NUL
// or invalid UTF-8 is refused; jsonb as version 1 and the text; timestamps
// as microseconds since 2000; text[] as a one-dimensional array of text).
// It appends to buf and returns the result.
func encodeCopy(buf []byte, rows []copyRow) []byte {
	e := copyEncoder{b: buf}
	e.b = append(e.b, copyHeader...)
	for i := range rows {
		r, row := rows[i].rec, &rows[i]
		e.b = binary.BigEndian.AppendUint16(e.b, copyColumnCount)
		e.int8(row.id)
		e.text(r.Tenant)
		e.text(r.ItemType)
		e.text(r.Subject)
		e.text(r.OriginalSubject)
		e.text(r.MsgID)
		e.bool(r.MsgIDDerived)
		e.text(r.OperationID)
		e.text(r.CorrelationID)
		e.text(r.Principal)
		e.text(r.Consumer)
		e.text(r.Error)
		e.text(string(r.ErrorClass))
		e.text(r.Stack)
		if r.Attempts == nil {
			e.null()
		} else {
			e.int4(*r.Attempts)
		}
		e.timeOrNull(r.FirstFailedAt)
		e.timeOrNull(r.LastFailedAt)
		e.time(r.DeadLetteredAt)
		e.headers(r.Headers)
		e.bytesOrNull(r.HeaderBlock)
		e.bytes(r.Payload)
		e.bytes(r.PayloadSHA256[:])
		e.int4(int32(len(r.Payload)))
		e.bool(r.PayloadUnavailable)
		e.text(r.Fingerprint)
		e.bool(r.Malformed())
		e.texts(r.MalformedReasons)
		e.texts(r.Flags)
		e.text(ingestStatus)
		e.text(r.SourceKind)
		e.text(r.SourceStream)
		if r.SourceSeq == 0 {
			e.null() // unknown
		} else {
			e.int8(int64(r.SourceSeq))
		}
		e.text(r.SourceConsumer)
		if len(r.Advisory) == 0 {
			e.null()
		} else {
			e.jsonb(r.Advisory)
		}
		e.bytes(row.key[:])
		e.text(row.delivery)
		if r.ReplayOf == 0 {
			e.null()
		} else {
			e.int8(r.ReplayOf)
		}
		e.int4(r.Generation)
	}
	e.b = binary.BigEndian.AppendUint16(e.b, 0xffff) // the end
	return e.b
}

// copyEncoder appends values in the binary COPY format: each a 32-bit
// length (-1: NULL) and its bytes.
type copyEncoder struct{ b []byte }

func (e *copyEncoder) len(n int) { e.b = binary.BigEndian.AppendUint32(e.b, uint32(n)) }

func (e *copyEncoder) null() { e.b = binary.BigEndian.AppendUint32(e.b, 0xffffffff) }

func (e *copyEncoder) text(s string) { e.len(len(s)); e.b = append(e.b, s...) }

func (e *copyEncoder) bytes(p []byte) { e.len(len(p)); e.b = append(e.b, p...) }

func (e *copyEncoder) bytesOrNull(p []byte) {
	if len(p) == 0 {
		e.null()
		return
	}
	e.bytes(p)
}

func (e *copyEncoder) bool(v bool) {
	e.len(1)
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

func (e *copyEncoder) int4(v int32) { e.len(4); e.b = binary.BigEndian.AppendUint32(e.b, uint32(v)) }

func (e *copyEncoder) int8(v int64) { e.len(8); e.b = binary.BigEndian.AppendUint64(e.b, uint64(v)) }

func (e *copyEncoder) time(t time.Time) { e.int8(pgMicros(t)) }

func (e *copyEncoder) timeOrNull(t *time.Time) {
	if t == nil {
		e.null()
		return
	}
	e.time(*t)
}

// jsonb is version 1 of jsonb's binary format: a version byte, then the
// JSON text.
func (e *copyEncoder) jsonb(doc []byte) {
	e.len(1 + len(doc))
	e.b = append(e.b, 1)
	e.b = append(e.b, doc...)
}

// headers is the jsonb of hs (appendHeadersJSON), written in place: its
// length is known once it is.
func (e *copyEncoder) headers(hs []HeaderValue) {
	at := len(e.b)
	e.len(0)
	e.b = append(e.b, 1) // jsonb version
	e.b = appendHeadersJSON(e.b, hs)
	binary.BigEndian.PutUint32(e.b[at:], uint32(len(e.b)-at-4))
}

// texts is a text[]: no dimension when empty, else one, from 1, with no
// NULL elements.
func (e *copyEncoder) texts(ss []string) {
	size := 12
	if len(ss) > 0 {
		size += 8
		for _, s := range ss {
			size += 4 + len(s)
		}
	}
	e.len(size)
	dims := uint32(0)
	if len(ss) > 0 {
		dims = 1
	}
	e.b = binary.BigEndian.AppendUint32(e.b, dims)
	e.b = binary.BigEndian.AppendUint32(e.b, 0) // no NULLs
	e.b = binary.BigEndian.AppendUint32(e.b, textOID)
	if len(ss) == 0 {
		return
	}
	e.b = binary.BigEndian.AppendUint32(e.b, uint32(len(ss)))
	e.b = binary.BigEndian.AppendUint32(e.b, 1)
	for _, s := range ss {
		e.text(s)
	}
}
