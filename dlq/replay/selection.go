package replay

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// MaxSelection bounds how many dead letters one selection may name: the
// largest bulk cap a policy table may give a class.
const MaxSelection = 100_000

// MaxSelectionHeaderBytes bounds the header bytes one selection copies into
// its drafts (and holds while it does): dead letters with big headers
// (a producer may send a megabyte of them with a few bytes of payload)
// reach it long before MaxSelection. Payloads are never copied.
const MaxSelectionHeaderBytes = 64 << 20

// ErrEmptySelection is returned when a selection names no dead letter the
// actor may see.
var ErrEmptySelection = quarantine.Errorf(quarantine.EINVALID, "the selection holds no dead letter you may replay")

// CanRequest says whether the actor may request replays of class in tenant.
type CanRequest func(tenant string, class replaypolicy.Class) bool

// MatchingIDs resolves a list filter, at this moment, to the ids of the
// dead letters it selects (newest first), at most limit of them, reading
// ids only. It returns an invalid quarantine.Error when the filter selects
// more: a bulk action works on an exact, frozen set, never on "whatever
// matches later".
func MatchingIDs(ctx context.Context, store *dlq.Store, f dlq.ListFilter, limit int) ([]int64, error) {
	ids, err := store.MatchingIDs(ctx, f, limit+1)
	if err != nil {
		return nil, fmt.Errorf("resolve selection: %w", err)
	}
	if len(ids) > limit {
		return nil, quarantine.Errorf(quarantine.EINVALID, "the filter selects more than %d dead letters; narrow it", limit)
	}
	return ids, nil
}

// What a selection is, before anything else of it is read: the tenant,
// item type and subject of each id, which give its class.
const selectSelectionKeys = `SELECT d.id, d.dead_lettered_at, d.tenant, d.item_type, d.original_subject, ` + dlq.JudgedErrorClassOfD + `, ` + judgedGenerationOfD + `
FROM unnest($1::bigint[], $2::timestamptz[]) AS k(id, at)
JOIN dead_letters d ON d.id = k.id AND d.dead_lettered_at = k.at`

// The facts the rules judge of the dead letters a selection keeps, and what
// a replay would send, but the payload: it is read from the dead letter when
// published (and checked against the hash frozen here), unless edited.
var draftFacts = factsSelect + `d.headers` + factsRest

// factsSelect and factsRest are the facts of a dead letter the rules
// judge, around what they judge of its headers: all of them (draftFacts), or
// only headerFacts' (selectForJudge). Whether the ledger holds a replay of
// its message id or operation id is asked of every dead letter (ledger.go),
// whatever its class: a few index probes each.
const factsSelect = `
SELECT d.id, d.dead_lettered_at, d.tenant, d.item_type, d.original_subject, d.msg_id, d.msg_id_derived, d.operation_id,
       d.correlation_id, d.principal, `

var (
	deadLetterLedger = ledgerTerms{tenant: "d.tenant", subject: "d.original_subject", msgID: "d.msg_id", opID: "d.operation_id", job: "NULL::bigint",
		origin: origins("d.tenant", "d.replay_of", "d.dead_lettered_at")}
	factsRest = `, d.payload_sha256, d.payload_unavailable, d.status,
       ` + deadLetterLedger.replayedByMsg() + ` AS msg_replayed_by,
       ` + deadLetterLedger.replayedByOp() + ` AS op_replayed_by,
       ` + chainCut("d.tenant", "d.replay_of", "d.dead_lettered_at") + ` AS chain_cut,
       ` + chainTwice("d.tenant", "d.replay_of", "d.dead_lettered_at", "d.received_at") + ` AS chain_twice,
       ` + heldBy("d.id") + `,
       ` + dlq.JudgedErrorClassOfD + `, ` + judgedGenerationOfD + `, ` + fixColumns + `, d.payload_size, d.flags, d.received_at,
       ` + dlq.ServiceTwinOfD + `, ` + dlq.ConflictingHeadersOfD
)

// The dead letters of keys ($1 ids, $2 their times), locked against
// removal until the drafts commit (FOR KEY SHARE: nothing that only
// changes a dead letter's status waits for it): retention skips a dead
// letter so locked, and asks again once it holds the lock whether a request
// names it (dlq's lockBatch, deleteBatch); the day a retention run empties
// whole is not emptied while a draft holds its lock
// (quarantine_dead_letter_partition_empty gives way).
// In id order, as every transaction that locks dead letters locks them.
var selectForDraft = draftFacts + `
FROM unnest($1::bigint[], $2::timestamptz[]) AS k(id, at)
JOIN dead_letters d ON d.id = k.id AND d.dead_lettered_at = k.at
` + fixJoin + `
ORDER BY d.id
FOR KEY SHARE OF d`

// headerFactsOf is the join hf: what the rules judge of headers (an SQL
// expression of a JSON array of dlq.HeaderValue as ingest stores them: a
// dead letter's d.headers, or the copy of them a request's item sends,
// replay_items' i.headers), as sendFacts judges them, computed by
// PostgreSQL so that a page never brings a producer's thousands of
// headers over to judge them: of the headers a replay forwards (Headers:
// a name stored as text, without a Nats-, Dlq- or Upstream-Dlq- prefix in
// any ASCII case; Go's strings.ToLower turns no other letter into one of
// those), the position of the first whose name NATS cannot send
// (replaypolicy.SendableHeaderName: empty, or holding a byte but
// replaypolicy.HeaderNameBytes, which translate removes), of the first whose
// value its consumers would read changed (sendFacts, forwardedAsIs: a CR
// or LF anywhere past its leading blanks, or a blank at its end, in the
// value as received: base64 decoded when so stored; a value that does not
// decode is not a change), each of a
// non-empty name as sendFacts counts them, the position of the first of a
// non-empty name whose name or value (as received: base64 decoded when so
// stored; a value that does not decode holds none) holds the text "Nats-"
// (replaypolicy.BrokerKeyText, byte for byte as HoldsBrokerKeyText
// compares: encode(..., 'escape') writes every byte of a decoded value but
// NUL, backslash and those above 127, which no letter of it is, as
// itself), and their bytes as sendFacts
// counts them (name, value as stored, 4). headerFactColumns reads it, and
// judgedHeaders.send turns it into sendFacts' terms.
func headerFactsOf(headers string) string {
	return `CROSS JOIN LATERAL (
    SELECT coalesce(sum(octet_length(v.name) + octet_length(v.value) + 4), 0) AS bytes,
           min(e.n) FILTER (WHERE v.name <> '' AND (strpos(v.name, ` + brokerKeyText + `) > 0 OR CASE v.encoding
                WHEN '' THEN strpos(v.value, ` + brokerKeyText + `) > 0
                WHEN 'base64' THEN CASE WHEN translate(v.value, E'\r\n', '') ~ '^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$'
                    THEN strpos(encode(decode(translate(v.value, E'\r\n', ''), 'base64'), 'escape'), ` + brokerKeyText + `) > 0
                    ELSE false END -- does not decode: holds none
                ELSE false END)) AS keytext,
           min(e.n) FILTER (WHERE v.name = '' OR translate(v.name, ` + sendableNameBytes + `, '') <> '') AS bad,
           min(e.n) FILTER (WHERE v.lower IN (` + statusHeaderNames + `)) AS status,
           min(e.n) FILTER (WHERE v.name <> '' AND CASE v.encoding
                WHEN '' THEN strpos(v.value, E'\r') > 0 OR strpos(v.value, E'\n') > 0
                             OR (right(v.value, 1) IN (' ', E'\t') AND ltrim(v.value, E' \t') <> '')
                WHEN 'base64' THEN CASE WHEN translate(v.value, E'\r\n', '') ~ '^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$'
                    THEN (SELECT position('\x0d'::bytea IN x.b) > 0 OR position('\x0a'::bytea IN x.b) > 0
                                 OR CASE WHEN length(x.b) > 0 THEN get_byte(x.b, length(x.b) - 1) IN (32, 9) ELSE false END -- no byte to read in an empty one
                          FROM ltrim(decode(translate(v.value, E'\r\n', ''), 'base64'), '\x2009'::bytea) AS x(b)) -- as Go decodes it: CR and LF ignored
                    ELSE false END -- does not decode: no change
                ELSE false END) AS altered
    FROM jsonb_array_elements(` + headers + `) WITH ORDINALITY AS e(h, n)
    CROSS JOIN LATERAL (SELECT coalesce(e.h->>'name', '') AS name, coalesce(e.h->>'value', '') AS value,
                               coalesce(e.h->>'encoding', '') AS encoding, lower(coalesce(e.h->>'name', '') COLLATE "C") AS lower) v
    WHERE coalesce(e.h->>'name_encoding', '') = ''
      AND NOT starts_with(v.lower, 'nats-') AND NOT starts_with(v.lower, 'dlq-') AND NOT starts_with(v.lower, 'upstream-dlq-')) hf`
}

// headerFacts is headerFactsOf a dead letter's headers as received, which
// selectForJudge and selectGroupCandidates judge.
var headerFacts = headerFactsOf("d.headers")

// headerFactColumns is what a query reads of headerFactsOf(headers), into
// judgedHeaders.targets: whether a header NATS cannot send is there and
// its name ("" also for an empty one), the name of the first it would send
// changed ("" when none), the name of the first that holds the broker's
// key text ("" when none), their bytes, and the name of the first a
// replay with no payload may not carry (natsStatusHeader; "" when none).
func headerFactColumns(headers string) string {
	return `hf.bad IS NOT NULL, coalesce(` + headers + ` -> (hf.bad - 1)::int ->> 'name', ''),
       coalesce(` + headers + ` -> (hf.altered - 1)::int ->> 'name', ''), coalesce(` + headers + ` -> (hf.keytext - 1)::int ->> 'name', ''), hf.bytes,
       coalesce(` + headers + ` -> (hf.status - 1)::int ->> 'name', '')`
}

// statusHeaderNames are natsStatusHeader's names as an SQL list of string
// literals.
var statusHeaderNames = "'" + strings.Join(statusHeaders, "', '") + "'"

// brokerKeyText is replaypolicy.BrokerKeyText as an SQL string literal.
var brokerKeyText = "'" + strings.ReplaceAll(replaypolicy.BrokerKeyText, "'", "''") + "'"

// sendableNameBytes is replaypolicy.HeaderNameBytes as an SQL string
// literal (it holds a quote).
var sendableNameBytes = "'" + strings.ReplaceAll(replaypolicy.HeaderNameBytes(), "'", "''") + "'"

// One dead letter, by id, looked for where its dead_lettered_at is in
// [$2, $3) (the partitions the map names): the facts a draft reads, but of
// its headers only headerFacts' (judgeHeaders).
var selectForJudge = factsSelect + judgeHeaders + factsRest + `
FROM dead_letters d
` + fixJoin + `
` + headerFacts + `
WHERE d.id = $1 AND d.dead_lettered_at >= $2 AND d.dead_lettered_at < $3`

// judgeHeaders is what selectForJudge and selectGroupCandidates read of a
// dead letter's headers (headerFacts), into judgeRow.
var judgeHeaders = headerFactColumns("d.headers")

// draftFactsInto are the targets of one row of draftFacts: the item's
// dead letter, correlation id and headers, the facts, and the payload's
// size (the dead letter's flags go to f).
func draftFactsInto(it *Item, f *facts, headers *[]byte, size *int64) []any {
	return factsInto(it, f, size, headers)
}

// factsInto are the targets of one row of factsSelect, headers (what the
// row reads of the dead letter's headers) and factsRest.
func factsInto(it *Item, f *facts, size *int64, headers ...any) []any {
	out := []any{&it.DeadLetterID, &it.DeadLetteredAt, &f.tenant, &f.itemType, &f.subject, &f.msgID, &f.msgIDDerived,
		&f.operationID, &it.CorrelationID, &f.principal}
	out = append(out, headers...)
	out = append(out, &f.payloadSHA256, &f.payloadUnavailable,
		&f.status, &f.msgReplayedBy, &f.opReplayedBy, &f.chainCut, &f.chainTwice, &f.heldBy, &f.heldByStatus, &f.errorClass, &f.generation)
	out = append(out, f.fixInto()...)
	return append(out, size, &f.flags, &f.receivedAt, &f.serviceTwin, &f.conflicting)
}

const insertRequest = `INSERT INTO replay_requests (batch, tenant, class, requester_issuer, requester_subject,
    requester_email, requester_email_verified, policy_version, rate, intent_hash, item_count, skipped_count)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`

// draftItem is one dead letter of a selection: the item as it will be
// sent and the rules' verdict.
type draftItem struct {
	item    Item
	verdict replaypolicy.Verdict
}

// group is the dead letters of a selection of one tenant and class.
type group struct {
	tenant string
	class  replaypolicy.Class
}

// CreateDrafts freezes a selection: the dead letters ids names (only those
// in tenants; all tenants when allTenants) become draft requests, one per
// tenant and policy class (the stricter of item type's and target
// subject's), each with its items, the headers and payload hash that will
// be sent, the rules' verdict on each item, and its intent hash. A class
// with more dead letters than its bulk cap allows (JudgeSelection) refuses
// the whole selection before anything but ids, tenants, types and subjects
// is read; payloads are never read. Ids of no dead letter, and those of
// classes the actor may not request, are audited as refused (a row per
// tenant, in the drafts' transaction).
// Later arrivals are never added. It returns the batch token.
func (s *Service) CreateDrafts(ctx context.Context, actor quarantine.Actor, ids []int64, tenants []string, allTenants bool,
	can CanRequest, meta quarantine.RequestMeta) (string, error) {
	ids = dlq.UniqueIDs(ids) // each dead letter is an item once
	if len(ids) == 0 {
		return "", ErrEmptySelection
	}
	if len(ids) > MaxSelection {
		return "", quarantine.Errorf(quarantine.EINVALID, "a selection may hold at most %d dead letters, this one holds %d", MaxSelection, len(ids))
	}
	table := s.cfg.Policy()
	batch := randomID()
	var refused refusedIDs
	// What decides a refusal is read detached from the client (judging): a
	// client that left has the ids it may not replay recorded all the same.
	tctx, jctx, cancel := judging(ctx)
	defer cancel()
	found, err := s.deadLetters.Keys(jctx, ids)
	if err != nil {
		return "", fmt.Errorf("create replay drafts: %w", err)
	}
	// The dead letters are locked (FOR KEY SHARE, in id order) against
	// retention; a lock race lost to a transaction that locks them
	// otherwise is tried again (dlq.InTx), from the start.
	err = dlq.InTx(tctx, s.pool, func(tx pgx.Tx) error {
		refused = refusedIDs{}
		keep, err := s.bound(jctx, tx, table, ids, found, tenants, allTenants, can, refused)
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err // judged: the refused are audited below, and nothing else is written for a client that left
		}
		groups := map[group][]draftItem{}
		var order []group
		kid, kat := dlq.KeyArrays(keep)
		rows, err := tx.Query(ctx, selectForDraft, kid, kat)
		if err != nil {
			return err
		}
		var d draftItem
		var f facts
		var headers []byte
		var size int64
		copied := 0 // header bytes read so far
		read := make(map[int64]bool, len(keep))
		_, err = pgx.ForEachRow(rows, draftFactsInto(&d.item, &f, &headers, &size), func() error {
			f.deadLetteredAt = d.item.DeadLetteredAt
			if copied += len(headers); copied > s.cfg.maxSelectionHeaderBytes() {
				return quarantine.Errorf(quarantine.EINVALID, "the selection's headers come to more than %d KiB; select fewer dead letters",
					s.cfg.maxSelectionHeaderBytes()>>10)
			}
			var hs []dlq.HeaderValue
			if err := json.Unmarshal(headers, &hs); err != nil {
				return fmt.Errorf("headers of dead letter %d: %w", d.item.DeadLetterID, err)
			}
			// No request holds it yet: its id is counted at the longest (sentAs).
			as := sentAs{deadLetterID: d.item.DeadLetterID, derivedMsgID: f.msgIDDerived}
			f.send = sendFacts(hs, f.flags, f.subject, size, s.cfg.MaxPayload, as, f.msgID, f.operationID, d.item.CorrelationID)
			f.originalSHA256 = f.payloadSHA256 // nothing is edited yet
			d.item.Subject, d.item.MsgID, d.item.OperationID, d.item.PayloadSHA256 = f.subject, f.msgID, f.operationID, f.payloadSHA256
			d.item.Headers = Headers(hs)
			d.verdict = replaypolicy.JudgeItem(table, f.item(s.cfg), replaypolicy.AtDraft)
			k := group{f.tenant, d.verdict.Class}
			if _, seen := groups[k]; !seen {
				order = append(order, k)
			}
			groups[k] = append(groups[k], d)
			read[d.item.DeadLetterID] = true
			d, f = draftItem{}, facts{}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range keep {
			if !read[k.ID] { // removed (by retention) since bound read it
				refused.AddMissing(k.ID)
			}
		}
		if len(order) == 0 {
			return ErrEmptySelection
		}
		if err := seen(ctx, tx, actor); err != nil { // the address the requester drafts under: Request.KnownAs
			return err
		}
		for _, k := range order {
			items := groups[k]
			verdicts := make([]replaypolicy.Verdict, len(items))
			for i, it := range items {
				verdicts[i] = it.verdict
			}
			for i, v := range replaypolicy.JudgeDraft(table, k.class, k.tenant, can(k.tenant, k.class), verdicts) {
				items[i].verdict = v
				items[i].item.Verdict, items[i].item.Check = verdictName(v.Outcome), v.Check
				if v.Outcome != replaypolicy.Go {
					items[i].item.SkipReason = v.Reason
				}
			}
			if err := s.insertDraft(ctx, tx, batch, k.tenant, k.class, actor, items, meta, table); err != nil {
				return err
			}
		}
		return s.auditRefused(ctx, tx, actor, meta, "replay.draft", refused)
	})
	if err != nil && refused.Len() > 0 {
		if aerr := s.auditRefused(ctx, nil, actor, meta, "replay.draft", refused); aerr != nil {
			return "", aerr
		}
	}
	if err != nil {
		return "", fmt.Errorf("create replay drafts: %w", err)
	}
	return batch, nil
}

// QueueJudge queues into b (a page's round trip) the read of what the
// replay rules make of dead letter id (its dead_lettered_at in [lo, hi))
// if it were selected now: JudgeItem at draft, on the same facts a draft
// reads, but that of its headers it reads only what the rules judge
// (headerFacts: its thousands of headers are never brought over). Once b
// has run, *out holds the verdict and *found says whether there was such a
// dead letter.
func (s *Service) QueueJudge(b *pgx.Batch, id int64, lo, hi time.Time, out *replaypolicy.Verdict, found *bool) {
	b.Queue(selectForJudge, id, lo, hi).Query(func(rows pgx.Rows) error {
		var r judgeRow
		*found = false
		_, err := pgx.ForEachRow(rows, r.targets(), func() error {
			*found = true
			return nil
		})
		if err != nil || !*found {
			return err
		}
		*out = s.judgeNow(&r)
		return nil
	})
}

// judgeRow is one row of selectForJudge (or selectGroupCandidates): a dead
// letter's facts, with what headerFacts read of its headers.
type judgeRow struct {
	it      Item
	f       facts
	headers judgedHeaders
	size    int64
}

func (r *judgeRow) targets() []any {
	return factsInto(&r.it, &r.f, &r.size, r.headers.targets()...)
}

// judgedHeaders are what headerFactColumns reads of the headers a replay
// would forward (headerFactsOf): all that sendFacts judges of them.
type judgedHeaders struct {
	hasBad       bool
	bad, altered string
	keyText      string // the first forwarded header holding replaypolicy.BrokerKeyText
	bytes        int64
	status       string // the first forwarded header natsStatusHeader names
}

func (h *judgedHeaders) targets() []any {
	return []any{&h.hasBad, &h.bad, &h.altered, &h.keyText, &h.bytes, &h.status}
}

// send is sendFacts of a message whose forwarded headers h was read of,
// with the other arguments sendFacts takes: sendFacts of the ids alone,
// then the headers' facts after them, in sendFacts' order. The two agree
// field for field (TestQueueJudgeHeaderFactsAsEveryHeader,
// TestRequestFactsHeaderFactsAsEveryHeader).
func (h judgedHeaders) send(flags []string, subject string, payloadSize, maxPayload int64, as sentAs, ids ...string) replaypolicy.Send {
	s := sendFacts(nil, flags, subject, payloadSize, maxPayload, as, ids...)
	s.HasBadHeader, s.BadHeader = h.hasBad, h.bad
	if s.AlteredHeader == "" {
		s.AlteredHeader = h.altered
	}
	if s.BrokerKeyText == "" {
		s.BrokerKeyText = h.keyText
	}
	s.Size += h.bytes
	if payloadSize == 0 {
		s.StatusHeader = h.status
	}
	return s
}

// judgeNow is what the rules make of r's dead letter if it were selected
// now: JudgeItem at draft, on the facts a draft reads.
func (s *Service) judgeNow(r *judgeRow) replaypolicy.Verdict {
	it, f := &r.it, &r.f
	// No request holds it: its id is counted at the longest (sentAs).
	as := sentAs{deadLetterID: it.DeadLetterID, derivedMsgID: f.msgIDDerived}
	f.send = r.headers.send(f.flags, f.subject, r.size, s.cfg.MaxPayload, as, f.msgID, f.operationID, it.CorrelationID)
	f.deadLetteredAt = it.DeadLetteredAt
	f.originalSHA256 = f.payloadSHA256
	return replaypolicy.JudgeItem(s.cfg.Policy(), f.item(s.cfg), replaypolicy.AtDraft)
}

// bound reads what the ids of the selection (found: the keys of those that
// name a dead letter) are, and only that (tenant, item type, subject), and
// returns the keys the selection keeps: those of dead letters in scope. A
// class over what JudgeSelection allows refuses the selection. Ids of no
// dead letter, and the ids of classes the actor may not request, go to
// refused. Dead letters outside the scope are left out here and audited by
// the route that named them.
func (s *Service) bound(ctx context.Context, tx pgx.Tx, table *replaypolicy.Table, ids []int64, keys []dlq.Key, tenants []string, all bool,
	can CanRequest, refused refusedIDs) ([]dlq.Key, error) {
	kid, kat := dlq.KeyArrays(keys)
	rows, err := tx.Query(ctx, selectSelectionKeys, kid, kat)
	if err != nil {
		return nil, err
	}
	found := make(map[int64]bool, len(ids))
	counts := map[group][]int64{}
	var keep []dlq.Key
	var id int64
	var at time.Time
	var tenant string
	var k replaypolicy.Key
	_, err = pgx.ForEachRow(rows, []any{&id, &at, &tenant, &k.ItemType, &k.Subject, &k.ErrorClass, &k.Generation}, func() error {
		found[id] = true
		if !all && !slices.Contains(tenants, tenant) {
			return nil
		}
		g := group{tenant, replaypolicy.Manual}
		if table != nil {
			g.class = table.Classify(k).Class
		}
		counts[g] = append(counts[g], id)
		keep = append(keep, dlq.Key{ID: id, At: at, Tenant: tenant})
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if !found[id] {
			refused.AddMissing(id)
		}
	}
	for g, ids := range counts {
		if v := replaypolicy.JudgeSelection(table, g.class, g.tenant, len(ids)); v.Outcome != replaypolicy.Go {
			return nil, refuse(v, quarantine.EINVALID)
		}
		if !can(g.tenant, g.class) {
			for _, id := range ids {
				refused.Add(id, g.tenant, fmt.Sprintf("may not request %s replays in %s", g.class, g.tenant))
			}
		}
	}
	return keep, nil
}

// insertDraft writes one draft request of items (every item, with the
// rules' verdict on each) and audits it. Payloads are not copied.
func (s *Service) insertDraft(ctx context.Context, tx pgx.Tx, batch, tenant string, class replaypolicy.Class,
	actor quarantine.Actor, items []draftItem, meta quarantine.RequestMeta, table *replaypolicy.Table) error {
	knobs, _ := table.Knobs(class)
	var live []Item
	skipped := 0
	for i := range items {
		items[i].item.Position = i
		if items[i].item.SkipReason != "" {
			skipped++
		} else {
			live = append(live, items[i].item)
		}
	}
	hash := IntentHash(tenant, class, table.Version(), knobs.DefaultRate, "", live)
	req := Request{Tenant: tenant, Class: class, Status: StatusDraft}
	if err := tx.QueryRow(ctx, insertRequest, batch, tenant, class, actor.Issuer, actor.Subject, actor.Email, actor.EmailVerified, table.Version(),
		knobs.DefaultRate, hash, len(live), skipped).Scan(&req.ID); err != nil {
		return err
	}
	rows := make([][]any, len(items))
	for i, d := range items {
		hs, err := json.Marshal(d.item.Headers)
		if err != nil {
			return err
		}
		rows[i] = []any{req.ID, d.item.DeadLetterID, d.item.DeadLetteredAt, d.item.Position, d.item.MsgID, d.item.OperationID, d.item.CorrelationID,
			d.item.Subject, string(hs), d.item.PayloadSHA256, d.item.SkipReason, d.item.Verdict, d.item.Check}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"replay_items"}, []string{"request_id", "dead_letter_id", "dead_lettered_at", "position", "msg_id",
		"operation_id", "correlation_id", "subject", "headers", "payload_sha256", "skip_reason", "verdict", "verdict_check"},
		pgx.CopyFromRows(rows)); err != nil {
		return err
	}
	e := requestEvent(actor, meta, "replay.draft", &req)
	e.After = map[string]any{"class": class, "items": len(live), "skipped": skipped, "intent": hex.EncodeToString(hash), "policy_version": table.Version()}
	_, err := audit.Append(ctx, tx, e)
	return err
}
