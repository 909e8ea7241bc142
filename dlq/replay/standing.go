package replay

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// An approval whose approver lost the right stops counting; the row stays.
const voidApproval = `UPDATE replay_approvals SET voided_at = least($4::timestamptz, now()), void_reason = $5
    WHERE request_id = $1 AND approver_issuer = $2 AND approver_subject = $3
      AND voided_at IS NULL -- voided once; a renewed approval counts again`

// standing is what the authority said of the people of a request before
// an approval of it is counted: why its requester may not request it
// ("" when they may), and why each earlier approver who lost the right to
// approve it no longer may, by identity.
type standing struct {
	requester string
	lost      map[string]string
}

// standingOf asks whether the people request id rests on still hold their
// rights (Config.Authority; nothing is asked without one): its requester
// the right to request, each earlier approver but actor the right to
// approve replays of its class in its tenant. It is asked before the
// approval's transaction, which holds a connection and the request's lock
// while the authority reads the directory on connections of its own.
func (s *Service) standingOf(ctx context.Context, id int64, actor quarantine.Actor) (standing, error) {
	a := s.cfg.Authority
	if a == nil {
		return standing{}, nil
	}
	req, err := getRequest(ctx, s.pool, id, false)
	if errors.Is(err, errNoRequest) {
		return standing{}, nil // the approval's transaction says it is not found
	}
	if err != nil {
		// Not read, not judged: an approval counted without it could
		// complete a request whose requester or approvers lost their rights.
		return standing{}, fmt.Errorf("read the request to check its people's rights: %w", err)
	}
	obj := replaypolicy.Object(req.Class)
	out := standing{lost: map[string]string{}}
	may, err := a.StillAllowed(ctx, req.Requester, req.Tenant, obj, "request")
	if err != nil {
		return standing{}, fmt.Errorf("check the requester's rights: %w", err)
	}
	if !may {
		out.requester = fmt.Sprintf("the requester %s no longer may request %s replays in %s: this request can never run; reject it",
			req.Requester.Attribution(), req.Class, req.Tenant)
	}
	as, err := approvals(ctx, s.pool, id)
	if err != nil {
		return standing{}, err
	}
	for _, ap := range as {
		if ap.VoidedAt != nil || ap.Approver.SameIdentity(actor) {
			continue
		}
		may, err := a.StillAllowed(ctx, ap.Approver, req.Tenant, obj, "approve")
		if err != nil {
			return standing{}, fmt.Errorf("check an approver's rights: %w", err)
		}
		if !may {
			out.lost[ap.Approver.Issuer+"|"+ap.Approver.Subject] = fmt.Sprintf("the approver %s no longer may approve %s replays in %s",
				ap.Approver.Attribution(), req.Class, req.Tenant)
		}
	}
	return out, nil
}

// voidLostApprovals acts, in the approval's transaction tx (req locked),
// on what standingOf found: an approval counts only while its approver may
// approve replays of the request's class in its tenant, so one whose
// approver lost the right (a binding removed, a group gone at a refresh,
// signed out everywhere) is voided here, audited in tx, and the request
// waits for another approver. A requester who lost the right to request
// makes the approval a conflict: such a request is never published (the
// workers block it), so nobody is asked to complete it. An approval given
// after standingOf asked was given by someone whose right the route had
// just checked. The actor's own right is the route's to check, on their
// session.
func (s *Service) voidLostApprovals(ctx context.Context, tx pgx.Tx, req *Request, actor quarantine.Actor, meta quarantine.RequestMeta, st standing) error {
	if st.requester != "" {
		return quarantine.Errorf(quarantine.ECONFLICT, "%s", st.requester)
	}
	if len(st.lost) == 0 {
		return nil
	}
	as, err := approvals(ctx, tx, req.ID)
	if err != nil {
		return err
	}
	for _, ap := range as {
		reason, lost := st.lost[ap.Approver.Issuer+"|"+ap.Approver.Subject]
		if !lost || ap.VoidedAt != nil {
			continue
		}
		tag, err := tx.Exec(ctx, voidApproval, req.ID, ap.Approver.Issuer, ap.Approver.Subject, s.cfg.Now(), reason)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return quarantine.Errorf(quarantine.ECONFLICT, "the approvals of this request changed meanwhile: reload it")
		}
		if _, err := audit.Append(ctx, tx, approvalVoidEvent(actor, meta, req, ap, reason)); err != nil {
			return err
		}
	}
	return nil
}

// approvalVoidEvent is the audit event of approval ap of req no longer
// counting, for reason, as actor's action made it so.
func approvalVoidEvent(actor quarantine.Actor, meta quarantine.RequestMeta, req *Request, ap Approval, reason string) audit.Event {
	e := requestEvent(actor, meta, audit.ActionReplayApprovalVoid, req)
	e.Reason = reason
	e.Before = map[string]any{"approver_issuer": ap.Approver.Issuer, "approver_subject": ap.Approver.Subject,
		"approver_email": ap.Approver.Email, "approved_at": ap.At}
	e.After = map[string]any{"counts": false}
	return e
}
