package replay

import (
	"context"
	"encoding/hex"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// facts are what the rules need to know about one item, as read from the
// database; item turns them into the rules' terms.
type facts struct {
	tenant, itemType, subject, msgID, operationID, principal string
	msgIDDerived, payloadUnavailable, alreadyReplayed        bool
	payloadSHA256, originalSHA256                            []byte
	status                                                   dlq.Status
}

func (f *facts) item(subjects *SubjectAllowlist) replaypolicy.Item {
	it := replaypolicy.Item{
		Tenant: f.tenant, ItemType: f.itemType, MsgID: f.msgID, MsgIDDerived: f.msgIDDerived, OperationID: f.operationID,
		Principal: f.principal, OriginalSubject: f.subject, PayloadSHA256: hex.EncodeToString(f.payloadSHA256),
		OriginalPayloadSHA256: hex.EncodeToString(f.originalSHA256), PayloadUnavailable: f.payloadUnavailable,
		AlreadyReplayed: f.alreadyReplayed, Status: string(f.status),
	}
	if f.subject != "" {
		if err := subjects.Check(f.subject); err != nil {
			it.SubjectRefusal = err.Error()
		}
	}
	return it
}

// What the rules judge of a request's items as they stand: the item as it
// will be sent, the dead letter as it is now. The first live item only: a
// request is one tenant and one class, and its items were judged one by one
// when it was drafted.
const selectRequestFacts = `
SELECT d.item_type, i.subject, i.msg_id, i.operation_id, d.principal, d.msg_id_derived, d.payload_unavailable,
       i.payload_sha256, d.payload_sha256, d.status
FROM replay_items i JOIN dead_letters d ON d.id = i.dead_letter_id
WHERE i.request_id = $1 AND i.skip_reason = '' ORDER BY i.position LIMIT 1`

// requestFacts gathers what the rules judge of req's items.
func (s *Service) requestFacts(ctx context.Context, q querier, req Request) ([]replaypolicy.Item, error) {
	rows, err := q.Query(ctx, selectRequestFacts, req.ID)
	if err != nil {
		return nil, err
	}
	f := facts{tenant: req.Tenant}
	var out []replaypolicy.Item
	_, err = pgx.ForEachRow(rows, []any{&f.itemType, &f.subject, &f.msgID, &f.operationID, &f.principal, &f.msgIDDerived,
		&f.payloadUnavailable, &f.payloadSHA256, &f.originalSHA256, &f.status}, func() error {
		out = append(out, f.item(s.cfg.Subjects))
		return nil
	})
	return out, err
}
