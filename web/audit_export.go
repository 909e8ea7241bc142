package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/authz"
)

// exportStatementTimeout bounds the query an export streams from. It is
// longer than the pool's statement_timeout (an export of millions of
// entries takes minutes) and no longer than the server's write timeout.
const exportStatementTimeout = 5 * time.Minute

// auditExportCSV signs the export itself with the checkpoint key
// (audit.ExportCSVSigned): its bytes, filter, range, counts and chain head.
func (s *Server) auditExportCSV(c echo.Context) error {
	signer := s.deps.Checkpoints.Signer()
	return s.auditExport(c, "text/csv; charset=utf-8", "csv",
		func(ctx context.Context, db audit.Querier, f audit.Filter, end audit.Checkpoint, w io.Writer) error {
			return audit.ExportCSVSigned(ctx, db, f, end, signer, w)
		})
}

// auditExportJSONL signs the export itself with the checkpoint key
// (audit.ExportJSONLSigned): its lines, filter and first and last seq.
func (s *Server) auditExportJSONL(c echo.Context) error {
	signer := s.deps.Checkpoints.Signer()
	return s.auditExport(c, "application/x-ndjson", "jsonl",
		func(ctx context.Context, db audit.Querier, f audit.Filter, end audit.Checkpoint, w io.Writer) error {
			return audit.ExportJSONLSigned(ctx, db, f, end, signer, w)
		})
}

// auditExport streams the current filter's entries, oldest first, ending
// with a signed checkpoint: the head is recorded as a checkpoint first (or
// the existing checkpoint of that head is used), and the export ends at the
// first checkpoint signed with the console's key at or after the last entry
// the filter selects (ExportEnd), the head when there is none, so anyone
// with the public key can check the export. The export itself is audited
// first.
func (s *Server) auditExport(c echo.Context, contentType, ext string,
	export func(context.Context, audit.Querier, audit.Filter, audit.Checkpoint, io.Writer) error) error {
	ctx := c.Request().Context()
	f, errs := readAuditFilter(c.QueryParams()).Validate()
	if errs != nil {
		return quarantine.Errorf(quarantine.EINVALID, "The filter is not valid; fix it on the audit page first.")
	}
	f.Tenants = s.auditScope(c, authz.ActExport)
	if f.Tenants == nil {
		f.Tenants = []string{audit.AllTenants}
	}
	// One row in each tenant exported, for its auditors to see; outside
	// any tenant when the export covers none of them by name (every
	// tenant's, or a tenant filter outside the exporter's scope). A row in
	// a tenant names nothing of another: it is written only in the
	// tenants the export took entries from, and says only the filter.
	var events []audit.Event
	for _, tenant := range s.exportedTenants(ctx, f) {
		e := s.event(c, "audit.export", audit.OutcomeOK)
		e.ObjectType, e.ObjectID, e.Reason = "audit_log", ext, "filter: "+exportFilterText(c.QueryParams())
		e.Tenant = tenant
		events = append(events, e)
	}
	if _, err := audit.AppendBatchFunc(ctx, s.deps.Pool, events); err != nil {
		return fmt.Errorf("audit export: %w", err)
	}
	head, err := s.deps.Checkpoints.Record(ctx, audit.ReasonExport)
	if err != nil {
		return fmt.Errorf("sign the head for the export: %w", err)
	}
	// An export of an old range ends at the first checkpoint of this
	// console's after its last entry, not at the head: the stubs past it
	// are then one checkpoint interval, not the whole newer log.
	signer := s.deps.Checkpoints.Signer()
	end, err := audit.ExportEnd(ctx, s.deps.Pool, f, head, audit.NewKeySet(signer.PublicKey()))
	if err != nil {
		return fmt.Errorf("find the checkpoint the export ends at: %w", err)
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, contentType)
	h.Set(echo.HeaderContentDisposition, fmt.Sprintf(`attachment; filename="audit-%s.%s"`, time.Now().UTC().Format("20060102T150405Z"), ext))
	h.Set("Cache-Control", "no-store")
	// The checkpoint the export ends at, also in the file's last record.
	h.Set("Audit-Chain-Head", fmt.Sprintf("%d:%s", end.Seq, end.HashHex()))
	c.Response().WriteHeader(http.StatusOK)
	err = pgx.BeginTxFunc(ctx, s.deps.Pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL statement_timeout = %d", exportStatementTimeout.Milliseconds())); err != nil {
			return err
		}
		return export(ctx, tx, f, end, c.Response())
	})
	if err != nil {
		// Headers are gone; the missing trailer tells the reader it is cut.
		s.deps.Log.Error("audit export interrupted", "err", err, "request_id", h.Get(echo.HeaderXRequestID))
	}
	return nil
}

// exportedTenants are the tenants an export of f takes entries from, as
// the tenants of its audit rows: the filter's tenant when it has one and
// the exporter may export it, else the exporter's tenants. "" (outside any
// tenant) stands for an export of every tenant's entries, and for one
// that names no tenant the console knows or may export.
func (s *Server) exportedTenants(ctx context.Context, f audit.Filter) []string {
	all := slices.Contains(f.Tenants, audit.AllTenants)
	switch {
	case f.Tenant != "" && all && slices.Contains(s.knownTenants(ctx), f.Tenant):
		return []string{f.Tenant}
	case f.Tenant != "" && !all && slices.Contains(f.Tenants, f.Tenant):
		return []string{f.Tenant}
	case f.Tenant != "" || all || len(f.Tenants) == 0:
		return []string{""}
	}
	return f.Tenants
}

// exportFilterText is the export's filter as its audit row says it: the
// parameters it read (auditFilterParams), as sent, in a fixed order,
// nothing else of the query string.
func exportFilterText(q url.Values) string {
	kept := url.Values{}
	for _, p := range auditFilterParams {
		if v, ok := q[p.name]; ok {
			kept[p.name] = v
		}
	}
	return kept.Encode()
}
