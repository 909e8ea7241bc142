package replay

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// facts are what the rules need to know about one item, as read from the
// database; item turns them into the rules' terms.
type facts struct {
	deadLetterID                                             int64
	tenant, itemType, subject, msgID, operationID, principal string
	msgIDDerived, payloadUnavailable                         bool
	edited                                                   bool
	// msgReplayedBy and opReplayedBy are the requests whose replays of its
	// message id and of its operation id the ledger holds (ledger.go; 0:
	// none).
	msgReplayedBy, opReplayedBy int64
	// chainCut is the origin up its Dlq-Replay-Of chain whose row retention
	// removed (ledger.go chainCut; 0: none).
	chainCut int64
	// chainTwice is the origin up that chain the console sent more than
	// one replay of (ledger.go chainTwice; 0: none).
	chainTwice                    int64
	payloadSHA256, originalSHA256 []byte
	status                        dlq.Status
	request, heldBy               int64
	heldByStatus                  string // where request heldBy stands ("" when none holds it)
	errorClass                    string
	deadLetteredAt                time.Time
	receivedAt                    time.Time // when the console stored it (dlq.DeadLetteredBy)
	generation                    int
	fixFacts
	send replaypolicy.Send
	// flags are the dead letter's (what ingest flagged; sendFacts reads
	// not_utf8:<field> of its ids and subject).
	flags []string
	// serviceTwin is the dead letter the service published itself of the
	// failure an advisory's dead letter was captured from
	// (dlq.ServiceTwinOfD; 0: none).
	serviceTwin int64
	// conflicting is what dlq.ConflictingHeadersOfD reads of the dead
	// letter's headers (a JSON array of dlq.HeaderValue): the values of
	// the identity headers its flags name as conflicting, for
	// conflictingOf.
	conflicting []byte
}

// conflictingOf is replaypolicy.Item.Conflicting of a dead letter of
// flags whose identity headers, as dlq.ConflictingHeadersOfD reads them,
// are stored (JSON, "" or null for none): dlq.ConflictsOf. The flags
// decide, in Go as in every query that judges; headers that cannot be
// read only leave the values unnamed.
func conflictingOf(flags []string, stored []byte) []replaypolicy.ConflictingHeader {
	var hs []dlq.HeaderValue
	if len(stored) > 0 {
		if err := json.Unmarshal(stored, &hs); err != nil {
			hs = nil // named without values: still blocked (ConflictsOf)
		}
	}
	var out []replaypolicy.ConflictingHeader
	for _, c := range dlq.ConflictsOf(flags, hs) {
		out = append(out, replaypolicy.ConflictingHeader{Header: c.Header, Values: c.Values, More: c.More})
	}
	return out
}

// item is f in the rules' terms, as the service judges it (cfg): the
// subject is judged by the tenant's replay subjects, and revalidate items
// need a revalidation service.
func (f *facts) item(cfg Config) replaypolicy.Item {
	it := replaypolicy.Item{
		Tenant: f.tenant, ItemType: f.itemType, MsgID: f.msgID, MsgIDDerived: f.msgIDDerived, OperationID: f.operationID,
		Principal: f.principal, OriginalSubject: f.subject, PayloadSHA256: hex.EncodeToString(f.payloadSHA256),
		OriginalPayloadSHA256: hex.EncodeToString(f.originalSHA256), PayloadEdited: f.edited, PayloadUnavailable: f.payloadUnavailable,
		AlreadyReplayed: f.msgReplayedBy != 0, OperationReplayed: f.opReplayedBy != 0,
		ChainCut: f.chainCut, ChainTwice: f.chainTwice,
		Status: string(f.status), Request: f.request, HeldBy: f.heldBy, HeldByStatus: f.heldByStatus,
		ErrorClass: f.errorClass, DeadLetteredAt: dlq.DeadLetteredBy(f.deadLetteredAt, f.receivedAt, f.flags), Generation: f.generation,
		NoRevalidator: cfg.noRevalidator(), Send: f.send, ServiceTwin: f.serviceTwin, Conflicting: conflictingOf(f.flags, f.conflicting),
	}
	it.ReplayedBy, it.AppliedOnly = replayedBy(f.msgReplayedBy, f.opReplayedBy)
	f.setFix(&it)
	if f.subject != "" {
		if err := cfg.Subjects.For(f.tenant, f.subject); err != nil {
			it.SubjectRefusal = err.Error()
		}
	}
	return it
}

// The latest fix that covers dead letter d (fix_markers_lookup_idx): of its
// item type, or of its error group, in its tenant; latest by when it
// counts as in place (the earlier of its fixed_at and when it was recorded:
// replaypolicy.Item.FixedInPlace). The queries that judge items join it as
// fx (fixed_at, recorded_at, fix_ref, who recorded it: by_issuer,
// by_subject, by_email, and that identity as the directory has it now:
// now_issuer, now_subject, now_email, NULL when never seen, and each
// address the console has seen it with: by_known, which separation of
// duties compares too: replaypolicy.FixedByRequester), and read it as
// fixColumns.
const fixJoin = `LEFT JOIN LATERAL (SELECT m.fixed_at, m.created_at AS recorded_at, m.fix_ref, m.created_by_issuer AS by_issuer,
            m.created_by_subject AS by_subject, m.created_by_email AS by_email,
            fu.issuer AS now_issuer, fu.subject AS now_subject, fu.email AS now_email,
            (SELECT jsonb_agg(jsonb_build_object('iss', k.issuer, 'sub', k.subject, 'email', k.email) ORDER BY k.email)
                FROM identity_addresses k WHERE k.issuer = m.created_by_issuer AND k.subject = m.created_by_subject) AS by_known
        FROM fix_markers m
        LEFT JOIN user_directory fu ON fu.issuer = m.created_by_issuer AND fu.subject = m.created_by_subject
        WHERE m.tenant = d.tenant AND m.item_type = d.item_type AND m.fingerprint IN ('', d.fingerprint)
        ORDER BY least(m.fixed_at, m.created_at) DESC LIMIT 1) fx ON true`

// fixColumns are what the queries read of fixJoin's fx, into fixInto.
const fixColumns = `fx.fixed_at, fx.recorded_at, coalesce(fx.fix_ref, ''), coalesce(fx.by_issuer, ''), coalesce(fx.by_subject, ''),
       coalesce(fx.by_email, ''), coalesce(fx.now_issuer, ''), coalesce(fx.now_subject, ''), coalesce(fx.now_email, ''),
       coalesce(fx.by_known, '[]')`

// fixFacts are the facts of the latest fix of an item (fixJoin).
type fixFacts struct {
	fixedAt, fixRecordedAt *time.Time
	fixRef                 string
	// fixBy is who recorded it (zero without a fix), fixByNow that
	// identity as the directory has it now (zero: never seen), and
	// fixByKnown each address the console has seen it with.
	fixBy, fixByNow quarantine.Actor
	fixByKnown      []quarantine.Actor
}

// fixInto are the scan targets of fixColumns.
func (f *fixFacts) fixInto() []any {
	return []any{&f.fixedAt, &f.fixRecordedAt, &f.fixRef, &f.fixBy.Issuer, &f.fixBy.Subject, &f.fixBy.Email,
		&f.fixByNow.Issuer, &f.fixByNow.Subject, &f.fixByNow.Email, &f.fixByKnown}
}

// setFix puts f's fix into it.
func (f *fixFacts) setFix(it *replaypolicy.Item) {
	it.FixRef, it.FixRecordedBy, it.FixRecordedByNow, it.FixRecordedByKnownAs = f.fixRef, f.fixBy, f.fixByNow, f.fixByKnown
	if f.fixedAt != nil {
		it.FixedAt, it.FixRecordedAt = *f.fixedAt, *f.fixRecordedAt
	}
}

// What the rules judge of EVERY live item of a request ($1, of tenant $2)
// as it stands: the item as it will be sent, the dead letter as it is now,
// whether the ledger holds a replay of its identities (ledger.go), and
// which open request holds the dead letter (one at most:
// replay_items_one_open_request). A dead letter retention removed (only
// possible before the request holds it) is judged as status "purged". Of
// the headers the item sends (replay_items.headers: a producer's, up to
// max_payload a dead letter, MaxSelection items a request) it reads only
// what the rules judge, in PostgreSQL (headerFactsOf, as a dead letter's
// page judges it): a request's page and its confirm page judge every live
// item on every view, and its approval and submit judge them again, none
// of which sends a header (TestRevLimits23RequestPageReadsEveryItemsHeaders).
// The intent hash binds the headers whole, and reads them so (liveItems).
var (
	itemLedger = ledgerTerms{tenant: "$2::text", subject: "i.subject", msgID: "i.msg_id", opID: "i.operation_id", job: "NULL::bigint",
		origin: origins("$2::text", "d.replay_of", "i.dead_lettered_at")}
	// requestFactsSelect and requestFactsRest are the facts of an item
	// around what they read of its headers (requestFactsInto).
	requestFactsSelect = `
SELECT i.dead_letter_id, coalesce(d.item_type, ''), i.subject, i.msg_id, i.operation_id, coalesce(d.principal, ''),
       coalesce(d.msg_id_derived, false), coalesce(d.payload_unavailable, true),
       i.payload IS NOT NULL, i.payload_sha256, d.payload_sha256, coalesce(d.status, '` + purged + `'),
       ` + itemLedger.replayedByMsg() + `, ` + itemLedger.replayedByOp() + `, ` + chainCut("$2::text", "d.replay_of", "i.dead_lettered_at") + `,
       ` + chainTwice("$2::text", "d.replay_of", "i.dead_lettered_at", "coalesce(d.received_at, i.dead_lettered_at)") + `,
       ` + heldBy("i.dead_letter_id") + `,
       ` + dlq.JudgedErrorClassOfD + `, i.dead_lettered_at, coalesce(` + judgedGenerationOfD + `, 0), ` + fixColumns + `,
       `
	requestFactsRest = `, coalesce(octet_length(i.payload), d.payload_size, 0), i.correlation_id, coalesce(d.flags, '{}'),
       coalesce(d.payload_size, 0), i.skip_reason, coalesce(d.received_at, i.dead_lettered_at), ` + dlq.ServiceTwinOfD + `,
       ` + dlq.ConflictingHeadersOfD + `
FROM replay_items i LEFT JOIN dead_letters d ON d.id = i.dead_letter_id AND d.dead_lettered_at = i.dead_lettered_at
` + fixJoin
	requestFactsColumns = requestFactsSelect + headerFactColumns("i.headers") + requestFactsRest + `
` + headerFactsOf("i.headers")
	selectRequestFacts = requestFactsColumns + `
WHERE i.request_id = $1 AND i.skip_reason = '' ORDER BY i.position`
	// The same of one live item, by the items' primary key (itemFacts).
	selectItemFacts = requestFactsColumns + `
WHERE i.request_id = $1 AND i.dead_letter_id = $3 AND i.skip_reason = ''`
	// The same of every live item and every left-out item that holds an
	// edit, which undoing the edit puts back in a draft (undoFacts).
	selectUndoFacts = requestFactsColumns + `
WHERE i.request_id = $1 AND (i.skip_reason = '' OR i.payload IS NOT NULL) ORDER BY i.position`
)

// heldBy is which request holds dead letter id (an SQL expression) and
// where that request stands: 0 and ” when none does (one at most:
// replay_items_one_open_request). Where it stands says how the dead letter
// is freed (replaypolicy.Item.HeldByStatus).
func heldBy(id string) string {
	return `coalesce((SELECT h.request_id FROM replay_items h WHERE h.dead_letter_id = ` + id + ` AND h.held), 0),
       coalesce((SELECT r.status FROM replay_items h JOIN replay_requests r ON r.id = h.request_id
                 WHERE h.dead_letter_id = ` + id + ` AND h.held), '')`
}

// purged is the status the rules see of a dead letter retention removed.
const purged = "purged"

// itemFact is one item of a request, judged: a live one, or (undoFacts)
// one left out that holds an edit (skipped: why it was left out).
type itemFact struct {
	deadLetterID int64
	item         replaypolicy.Item
	// size is the payload the item sends (its edit, if any), originalSize
	// the dead letter's as received, in bytes; editedHeader what the
	// replay's marker of an edit (Dlq-Payload-Edited) adds to its size
	// (0: not edited).
	size, originalSize, editedHeader int64
	skipped                          string
}

// unedited is f's item with its edit undone, as undoEdit leaves it: the
// payload received, sent as by an item never edited (f's item when it
// holds no edit).
func (f itemFact) unedited() replaypolicy.Item {
	it := f.item
	if !it.PayloadEdited {
		return it
	}
	it.Send.Size += f.originalSize - f.size - f.editedHeader
	it.PayloadEdited, it.PayloadSHA256 = false, it.OriginalPayloadSHA256
	return it
}

// requestFacts gathers what the rules judge of every live item of req,
// of its headers only what PostgreSQL reads of them (selectRequestFacts).
func (s *Service) requestFacts(ctx context.Context, q querier, req Request) ([]itemFact, error) {
	return s.factsOf(ctx, q, selectRequestFacts, req)
}

// itemFacts gathers what the rules judge of live item deadLetterID of
// req, as requestFacts judges it: none when req holds no such live item.
// Settling one item reads only it, not the whole request
// (TestReconcileReadsOnlyTheSettledItem).
func (s *Service) itemFacts(ctx context.Context, q querier, req Request, deadLetterID int64) ([]itemFact, error) {
	return s.factsOf(ctx, q, selectItemFacts, req, deadLetterID)
}

// undoFacts gathers what the rules judge of every live item of req and of
// every item left out that holds an edit, in the request's order: what
// undoing an edit is judged on (undoPreviews).
func (s *Service) undoFacts(ctx context.Context, q querier, req Request) ([]itemFact, error) {
	return s.factsOf(ctx, q, selectUndoFacts, req)
}

// factsOf gathers what the rules judge of the items of req that query
// (selectRequestFacts, selectItemFacts or selectUndoFacts) reads; args
// are its parameters after the request's id and tenant.
func (s *Service) factsOf(ctx context.Context, q querier, query string, req Request, args ...any) ([]itemFact, error) {
	rows, err := q.Query(ctx, query, append([]any{req.ID, req.Tenant}, args...)...)
	if err != nil {
		return nil, err
	}
	f := facts{tenant: req.Tenant, request: req.ID}
	var r requestRow
	var hf judgedHeaders
	var out []itemFact
	_, err = pgx.ForEachRow(rows, requestFactsInto(&f, &r, hf.targets()...), func() error {
		as := f.inRequest()
		f.send = hf.send(f.flags, f.subject, r.size, s.cfg.MaxPayload, as, f.msgID, f.operationID, r.corr)
		out = append(out, r.itemFact(&f, s.cfg, as))
		return nil
	})
	return out, err
}

// requestRow is what a row of requestFactsSelect and requestFactsRest
// reads of an item beside its facts: the size of the payload it sends,
// the dead letter's as received, its correlation id, and why it was left
// out ("" for a live item).
type requestRow struct {
	size, originalSize int64
	corr, skipped      string
}

// requestFactsInto are the targets of one row of requestFactsSelect,
// headers (what the row reads of the item's headers) and requestFactsRest.
func requestFactsInto(f *facts, r *requestRow, headers ...any) []any {
	out := []any{&f.deadLetterID, &f.itemType, &f.subject, &f.msgID, &f.operationID, &f.principal, &f.msgIDDerived,
		&f.payloadUnavailable, &f.edited, &f.payloadSHA256, &f.originalSHA256, &f.status, &f.msgReplayedBy, &f.opReplayedBy, &f.chainCut, &f.chainTwice, &f.heldBy,
		&f.heldByStatus, &f.errorClass, &f.deadLetteredAt, &f.generation}
	out = append(append(out, f.fixInto()...), headers...)
	return append(out, &r.size, &r.corr, &f.flags, &r.originalSize, &r.skipped, &f.receivedAt, &f.serviceTwin, &f.conflicting)
}

// inRequest is how the item of f is sent by the request that holds it
// (f.request).
func (f *facts) inRequest() sentAs {
	return sentAs{deadLetterID: f.deadLetterID, requestID: f.request, edited: f.edited, derivedMsgID: f.msgIDDerived}
}

// itemFact is the item of f (its send judged), sent as as, judged as cfg
// judges it.
func (r *requestRow) itemFact(f *facts, cfg Config, as sentAs) itemFact {
	return itemFact{deadLetterID: f.deadLetterID, item: f.item(cfg), size: r.size, originalSize: r.originalSize, editedHeader: as.editMarker(), skipped: r.skipped}
}

// items are the rules' terms of facts.
func items(fs []itemFact) []replaypolicy.Item {
	out := make([]replaypolicy.Item, len(fs))
	for i, f := range fs {
		out[i] = f.item
	}
	return out
}
