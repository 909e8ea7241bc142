package replay

import (
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
