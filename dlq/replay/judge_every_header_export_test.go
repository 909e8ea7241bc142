package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// selectEveryHeaderForJudge is the read QueueJudge made before it read
// only the header facts the rules judge: every fact a draft reads, every
// header included.
var selectEveryHeaderForJudge = draftFacts + `
FROM dead_letters d
` + fixJoin + `
WHERE d.id = $1 AND d.dead_lettered_at >= $2 AND d.dead_lettered_at < $3`

// QueueJudgeEveryHeader is QueueJudge as it judged before: it reads every
// header of the dead letter, decodes them and gives them to sendFacts, as a
// draft does. The tests hold QueueJudge's verdict to it, field for field.
func (s *Service) QueueJudgeEveryHeader(b *pgx.Batch, id int64, lo, hi time.Time, out *replaypolicy.Verdict, found *bool) {
	b.Queue(selectEveryHeaderForJudge, id, lo, hi).Query(func(rows pgx.Rows) error {
		var it Item
		var f facts
		var headers []byte
		var size int64
		*found = false
		_, err := pgx.ForEachRow(rows, draftFactsInto(&it, &f, &headers, &size), func() error {
			*found = true
			return nil
		})
		if err != nil || !*found {
			return err
		}
		var hs []dlq.HeaderValue
		if err := json.Unmarshal(headers, &hs); err != nil {
			return fmt.Errorf("headers of dead letter %d: %w", id, err)
		}
		f.send = sendFacts(hs, f.flags, f.subject, size, s.cfg.MaxPayload, sentAs{deadLetterID: it.DeadLetterID, derivedMsgID: f.msgIDDerived}, f.msgID, f.operationID, it.CorrelationID)
		f.deadLetteredAt = it.DeadLetteredAt
		f.originalSHA256 = f.payloadSHA256
		*out = replaypolicy.JudgeItem(s.cfg.Policy(), f.item(s.cfg), replaypolicy.AtDraft)
		return nil
	})
}

// selectEveryItemFacts is selectRequestFacts of every item of a request,
// live or left out, in order.
var selectEveryItemFacts = requestFactsColumns + `
WHERE i.request_id = $1 ORDER BY i.position`

// selectEveryItemEveryHeader is the read selectEveryItemFacts was before
// requestFacts read only the header facts the rules judge: every fact,
// every header of each item included.
var selectEveryItemEveryHeader = requestFactsSelect + `i.headers` + requestFactsRest + `
WHERE i.request_id = $1 ORDER BY i.position`

// RequestItemsJudged is what the rules are given of every item of request
// id (those left out too), by dead letter: judged as requestFacts reads
// them (of their headers, only what PostgreSQL reads: headerFactsOf), and
// every as requestFacts read them before, every header decoded and given
// to sendFacts. The tests hold judged to every, field for field.
func (s *Service) RequestItemsJudged(ctx context.Context, id int64) (judged, every map[int64]replaypolicy.Item, err error) {
	req, err := getRequest(ctx, s.pool, id, false)
	if err != nil {
		return nil, nil, err
	}
	fs, err := s.factsOf(ctx, s.pool, selectEveryItemFacts, req)
	if err != nil {
		return nil, nil, err
	}
	judged = map[int64]replaypolicy.Item{}
	for _, f := range fs {
		judged[f.deadLetterID] = f.item
	}
	rows, err := s.pool.Query(ctx, selectEveryItemEveryHeader, req.ID, req.Tenant)
	if err != nil {
		return nil, nil, err
	}
	every = map[int64]replaypolicy.Item{}
	f := facts{tenant: req.Tenant, request: req.ID}
	var r requestRow
	var headers []byte
	_, err = pgx.ForEachRow(rows, requestFactsInto(&f, &r, &headers), func() error {
		var hs []dlq.HeaderValue
		if err := json.Unmarshal(headers, &hs); err != nil {
			return fmt.Errorf("headers of dead letter %d: %w", f.deadLetterID, err)
		}
		as := f.inRequest()
		f.send = sendFacts(hs, f.flags, f.subject, r.size, s.cfg.MaxPayload, as, f.msgID, f.operationID, r.corr)
		every[f.deadLetterID] = r.itemFact(&f, s.cfg, as).item
		return nil
	})
	return judged, every, err
}
