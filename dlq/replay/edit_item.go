package replay

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

const (
	// What an item is classed by (replaypolicy.Table.Classify): its dead
	// letter's item type, error class and generation, and the subject it
	// is sent to. Any item of the request, live or left out.
	selectItemClassing = `SELECT coalesce(d.item_type, ''), i.subject, ` + dlq.JudgedErrorClassOfD + `, coalesce(` + judgedGenerationOfD + `, 0)
        FROM replay_items i LEFT JOIN dead_letters d ON d.id = i.dead_letter_id AND d.dead_lettered_at = i.dead_lettered_at
        WHERE i.request_id = $1 AND i.dead_letter_id = $2`
	// A left-out item of a draft whose edit was undone goes back among the
	// live items, to be judged again without it.
	reviveEdited = `UPDATE replay_items SET skip_reason = '', verdict = 'go', verdict_check = ''
        WHERE request_id = $1 AND dead_letter_id = $2 AND skip_reason <> ''` // only a left-out item
)

// judgeEditItem refuses (invalid, with the rule's sentence) an edit of
// item deadLetterID of request id that the item's own classing under the
// active rules forbids (replaypolicy.JudgeEditItem: same_operation in its
// union). The request's class is the strictest of its items' classes, so
// an item same_operation by its item type under a stricter subject's
// class would be edited, and then refused at every later step.
func (s *Service) judgeEditItem(ctx context.Context, tx pgx.Tx, id, deadLetterID int64) error {
	var it replaypolicy.Item
	err := tx.QueryRow(ctx, selectItemClassing, id, deadLetterID).Scan(&it.ItemType, &it.OriginalSubject, &it.ErrorClass, &it.Generation)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("item %d of request %d: %w", deadLetterID, id, errNoItem)
	}
	if err != nil {
		return err
	}
	if v := replaypolicy.JudgeEditItem(s.cfg.Policy(), it); v.Outcome != replaypolicy.Go {
		return refuse(v, quarantine.EINVALID)
	}
	return nil
}

// reviveUndone puts item deadLetterID of draft req, left out while it held
// the edit just undone, back among the live items and judges it again as
// the draft did (judgeAgain): it goes when the rules let it go as
// received, else it is left out again with their sentence, which is
// returned. The rules may have left it out for the edit itself (a
// same_operation item's, say): kept out, it could never go again.
func (s *Service) reviveUndone(ctx context.Context, tx pgx.Tx, req Request, deadLetterID int64) (string, error) {
	if _, err := tx.Exec(ctx, reviveEdited, req.ID, deadLetterID); err != nil {
		return "", err
	}
	v, err := s.judgeAgain(ctx, tx, req, deadLetterID)
	if err != nil || v.Outcome == replaypolicy.Go {
		return "", err
	}
	return v.Reason, nil
}
