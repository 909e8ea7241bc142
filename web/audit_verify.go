package web

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/views"
)

// verifyTimeout bounds one verification of the whole chain (it streams the
// log in one read-only snapshot).
const verifyTimeout = 10 * time.Minute

// auditVerify runs the check `console audit verify` runs: the whole hash
// chain, and every checkpoint's signature with the keys the console trusts
// (its signing key's and AUDIT_PUBLIC_KEYS). One runs at a time; each is
// audited (audit.verify) with its result. With htmx it answers the result
// for the audit page, else a page.
func (s *Server) auditVerify(c echo.Context) error {
	if !s.verifying.TryLock() {
		return quarantine.Errorf(quarantine.ECONFLICT, "A verification is running; try again when it has finished.")
	}
	defer s.verifying.Unlock()
	ctx := c.Request().Context()
	res, err := s.verifyChain(ctx)
	if err != nil {
		return err
	}
	e := s.event(c, audit.ActionVerify, audit.OutcomeOK)
	if !res.OK() {
		e.Outcome = audit.OutcomeError
	}
	e.Reason = res.String()
	e.After = map[string]any{"rows": res.Rows, "head_seq": res.HeadSeq, "head": res.HeadHex(), "checkpoints": res.Checkpoints, "first_bad": res.FirstBad}
	if _, err := audit.AppendFunc(ctx, s.deps.Pool, e); err != nil {
		return err
	}
	m := views.AuditVerifyModel{
		OK: res.OK(), Summary: res.String(), Rows: res.Rows, HeadSeq: res.HeadSeq, Head: res.HeadHex(), FirstBad: res.FirstBad,
		Problem: res.Problem, Checkpoints: res.Checkpoints, LastCheckpoint: res.LastCheckpoint.Seq, Keys: s.deps.AuditKeys.IDs(), At: time.Now(),
	}
	if c.Request().Header.Get("HX-Request") != "" {
		return s.render(c, http.StatusOK, views.AuditVerifyResult(m))
	}
	return s.render(c, http.StatusOK, views.AuditVerify(s.page(c, "Verify the audit chain", "audit"), m))
}

// verifyChain verifies the chain in one read-only snapshot, with a
// statement timeout long enough for the whole log.
func (s *Server) verifyChain(ctx context.Context) (audit.Result, error) {
	var res audit.Result
	err := pgx.BeginTxFunc(ctx, s.deps.Pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = "+strconv.FormatInt(verifyTimeout.Milliseconds(), 10)); err != nil {
			return err
		}
		var err error
		res, err = audit.Verify(ctx, tx, audit.VerifyOptions{Keys: s.deps.AuditKeys})
		return err
	})
	return res, err
}
