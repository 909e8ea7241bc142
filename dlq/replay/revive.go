package replay

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine/replaypolicy"
)

const (
	reviveItem = `UPDATE replay_items SET skip_reason = '', verdict = 'go', verdict_check = ''
        WHERE request_id = $1 AND dead_letter_id = $2 AND verdict_check = 'error-class-fix'` // only what an edit lets go
	// The counts follow the items, whatever changed.
	recountItems = `UPDATE replay_requests r SET version = version + 1,
        item_count = (SELECT count(*) FROM replay_items i WHERE i.request_id = r.id AND i.skip_reason = ''),
        skipped_count = (SELECT count(*) FROM replay_items i WHERE i.request_id = r.id AND i.skip_reason <> '')
        WHERE id = $1 AND status = 'draft'` // only a draft's items change so
)

// revive judges again, with its edited payload, item deadLetterID of draft
// req, left out because its error class replays only edited or after a
// fix: when the rules now let it go (judgeAgain), it is live again;
// otherwise it stays left out with the rules' new sentence. It returns the
// item's verdict.
func (s *Service) revive(ctx context.Context, tx pgx.Tx, req Request, deadLetterID int64) (replaypolicy.Verdict, error) {
	if _, err := tx.Exec(ctx, reviveItem, req.ID, deadLetterID); err != nil {
		return replaypolicy.Verdict{}, err
	}
	return s.judgeAgain(ctx, tx, req, deadLetterID)
}

// judgeAgain judges live item deadLetterID of draft req as the draft
// judged it (JudgeItem at draft, then the draft's bulk rules over every
// live item: JudgeDraft) and leaves it out, with the rules' sentence,
// when they do not let it go; the draft's counts follow. It returns the
// item's verdict (Go when it is not live).
func (s *Service) judgeAgain(ctx context.Context, tx pgx.Tx, req Request, deadLetterID int64) (replaypolicy.Verdict, error) {
	fs, err := s.requestFacts(ctx, tx, req)
	if err != nil {
		return replaypolicy.Verdict{}, err
	}
	table := s.cfg.Policy()
	verdicts := make([]replaypolicy.Verdict, len(fs))
	at := -1
	for i, f := range fs {
		verdicts[i] = replaypolicy.JudgeItem(table, f.item, replaypolicy.AtDraft)
		if f.deadLetterID == deadLetterID {
			at = i
		}
	}
	v := replaypolicy.Verdict{Rule: -1, Outcome: replaypolicy.Go}
	if at >= 0 {
		v = replaypolicy.JudgeDraft(table, req.Class, req.Tenant, true, verdicts)[at]
		if v.Outcome != replaypolicy.Go {
			if _, err := tx.Exec(ctx, leaveOut, req.ID, deadLetterID, v.Reason, verdictName(v.Outcome), v.Check); err != nil {
				return replaypolicy.Verdict{}, err
			}
		}
	}
	_, err = tx.Exec(ctx, recountItems, req.ID)
	return v, err
}
