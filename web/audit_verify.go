package web

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/views"
)

// verifyTimeout bounds one verification of the whole chain (it streams the
// log in one read-only snapshot).
const verifyTimeout = 10 * time.Minute

// auditVerify runs the check `console audit verify` runs: the whole hash
// chain, every checkpoint's signature with the keys the console trusts
// (its signing key's and AUDIT_PUBLIC_KEYS), and the anchor the form gives
// (seq:hash, a head kept elsewhere), if any. One runs at a time; each is
// audited (audit.verify) with its result. With htmx it answers the result
// for the audit page, else a page; an anchor that is not seq:hash is a 422
// and nothing runs. Both list the public keys, to check exports with.
func (s *Server) auditVerify(c echo.Context) error {
	v := views.AuditVerifyPage{Anchor: views.AuditVerifyAnchor{Text: strings.TrimSpace(c.FormValue("anchor"))}}
	keys, err := publicKeys(s.deps.AuditKeys)
	if err != nil {
		return err
	}
	v.Keys = keys
	var opts audit.VerifyOptions
	if v.Anchor.Text != "" {
		a, err := audit.ParseAnchor(v.Anchor.Text)
		if err != nil {
			v.Anchor.Error = "Type the seq and hash of a head, as a check shows it: 1234:9f86d0…, 64 hex digits after the colon."
			return s.renderVerify(c, http.StatusUnprocessableEntity, v)
		}
		v.Anchor.Seq, opts.Anchors = a.Seq, []audit.Anchor{a}
	}
	if !s.verifying.TryLock() {
		// Said where the result would go: htmx swaps a 200 into the page
		// (a 409 would only say the server answered 409).
		v.Busy = true
		status := http.StatusConflict
		if c.Request().Header.Get("HX-Request") != "" {
			status = http.StatusOK
		}
		return s.renderVerify(c, status, v)
	}
	defer s.verifying.Unlock()
	// A check may take longer than the server lets a response take to be
	// written (NewHTTPServer's WriteTimeout): the verdict of a log that
	// takes minutes to walk would be audited and then never reach the
	// auditor.
	keepWriting(c, verifyTimeout+time.Minute)
	ctx := c.Request().Context()
	res, err := s.verifyChain(ctx, opts)
	if err != nil {
		return err
	}
	e := s.event(c, audit.ActionVerify, audit.OutcomeOK)
	if !res.OK() {
		e.Outcome = audit.OutcomeError
	}
	e.Reason = res.String()
	after := map[string]any{"rows": res.Rows, "head_seq": res.HeadSeq, "head": res.HeadHex(), "checkpoints": res.Checkpoints, "first_bad": res.FirstBad}
	if v.Anchor.Seq != 0 {
		after["anchor"] = v.Anchor.Text
	}
	e.After = after
	if _, err := audit.AppendFunc(ctx, s.deps.Pool, e); err != nil {
		return err
	}
	// An anchor before the first problem held, one at it is the problem
	// (or a checkpoint at its seq is), and one after it is not vouched for
	// (the walk goes on, but what it reads past a break proves nothing).
	v.Anchor.Matched = res.OK() || res.FirstBad > v.Anchor.Seq
	v.Anchor.Reached = v.Anchor.Matched || res.FirstBad == v.Anchor.Seq
	v.Result = &views.AuditVerifyModel{
		OK: res.OK(), Summary: res.String(), Rows: res.Rows, HeadSeq: res.HeadSeq, Head: res.HeadHex(), FirstBad: res.FirstBad,
		Problem: res.Problem, ProblemCount: res.ProblemCount, Warnings: res.Warnings, Checkpoints: res.Checkpoints, LastCheckpoint: res.LastCheckpoint.Seq, Keys: s.deps.AuditKeys.IDs(), At: authz.Now(ctx),
	}
	if len(res.Problems) > 1 {
		v.Result.More = res.Problems[1:]
	}
	return s.renderVerify(c, http.StatusOK, v)
}

// renderVerify answers the result for the audit page to htmx, else the page.
func (s *Server) renderVerify(c echo.Context, status int, v views.AuditVerifyPage) error {
	if c.Request().Header.Get("HX-Request") != "" {
		return s.render(c, status, views.AuditVerifyResult(v))
	}
	return s.render(c, status, views.AuditVerify(s.page(c, "Verify the audit chain", "audit"), v))
}

// keepWriting lets the response of c be written for d from now, past the
// server's write timeout, for a route whose work is bounded by its own
// longer timeout. A writer that cannot take a deadline (a test's
// recorder) has none to extend.
func keepWriting(c echo.Context, d time.Duration) {
	_ = http.NewResponseController(c.Response()).SetWriteDeadline(time.Now().Add(d))
}

// publicKeys are the keys of ks as the verify page lists them, by id.
func publicKeys(ks *audit.KeySet) ([]views.AuditPublicKey, error) {
	var out []views.AuditPublicKey
	for _, id := range ks.IDs() {
		pem, err := audit.PublicKeyPEM(ks.Key(id))
		if err != nil {
			return nil, err
		}
		out = append(out, views.AuditPublicKey{ID: id, PEM: string(pem)})
	}
	return out, nil
}

// verifyChain verifies the chain in one read-only snapshot, with a
// statement timeout long enough for the whole log.
func (s *Server) verifyChain(ctx context.Context, opts audit.VerifyOptions) (audit.Result, error) {
	var res audit.Result
	err := pgx.BeginTxFunc(ctx, s.deps.Pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = "+strconv.FormatInt(verifyTimeout.Milliseconds(), 10)); err != nil {
			return err
		}
		var err error
		opts.Keys = s.deps.AuditKeys
		res, err = audit.Verify(ctx, tx, opts)
		return err
	})
	return res, err
}
