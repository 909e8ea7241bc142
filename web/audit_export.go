package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
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
// It re-hashes the stubs first (audit.CheckCSVStubs): one whose stored hash
// is not its digest's would stop the export halfway, so it is refused
// before anything is sent, with a message naming the entry.
func (s *Server) auditExportCSV(c echo.Context) error {
	signer := s.deps.Checkpoints.Signer()
	return s.auditExport(c, exportFormat{contentType: "text/csv; charset=utf-8", ext: "csv", check: audit.CheckCSVStubs,
		write: func(ctx context.Context, db audit.Querier, f audit.Filter, end audit.Checkpoint, w io.Writer) error {
			return audit.ExportCSVSigned(ctx, db, f, end, signer, w)
		}})
}

// auditExportJSONL signs the export itself with the checkpoint key
// (audit.ExportJSONLSigned): its lines, filter and first and last seq.
func (s *Server) auditExportJSONL(c echo.Context) error {
	signer := s.deps.Checkpoints.Signer()
	return s.auditExport(c, exportFormat{contentType: "application/x-ndjson", ext: "jsonl",
		write: func(ctx context.Context, db audit.Querier, f audit.Filter, end audit.Checkpoint, w io.Writer) error {
			return audit.ExportJSONLSigned(ctx, db, f, end, signer, w)
		}})
}

// exportFormat is how auditExport writes one format: its content type and
// file extension, what it checks before sending anything (nil for
// nothing), and the writer of the file.
type exportFormat struct {
	contentType, ext string
	check            func(ctx context.Context, db audit.Querier, f audit.Filter, end int64) error
	write            func(context.Context, audit.Querier, audit.Filter, audit.Checkpoint, io.Writer) error
}

// auditExport streams the current filter's entries, oldest first, ending
// with a signed checkpoint: the head is recorded as a checkpoint first (or
// the existing checkpoint of that head is used), and the export ends at the
// first checkpoint signed with the console's key at or after the last entry
// the filter selects (ExportEnd), the head when there is none, so anyone
// with the public key can check the export. The export itself is audited
// first.
//
// An export that fails before it sends anything (signing the head,
// finding its end, the format's check) is answered with the error; one
// that fails once sending has begun has its connection cut (the writer's
// last record says it stopped), so that no browser or client takes the
// part it got for a complete file. Either way the failure is audited
// beside the export's row (writeExport).
func (s *Server) auditExport(c echo.Context, format exportFormat) error {
	ctx := c.Request().Context()
	form := readAuditFilter(c.QueryParams(), authz.Now(ctx))
	f, errs := form.Validate()
	if errs != nil {
		return quarantine.Errorf(quarantine.EINVALID, "The filter is not valid; fix it on the audit page first.")
	}
	f.Tenants = s.auditScope(c, authz.ActExport)
	if f.Tenants == nil {
		f.Tenants = []string{audit.AllTenants}
	}
	if err := s.requestItems(ctx, &f); err != nil {
		return err
	}
	// One row in each tenant exported, for its auditors to see; outside
	// any tenant when the export covers none of them by name (every
	// tenant's, or a tenant filter outside the exporter's scope). A row in
	// a tenant names nothing of another: it says the filter only in the
	// tenants the export takes entries from, so that no tenant's log names
	// what was searched for in another's (a message id, an operation, an
	// object of one tenant); in the others it says only that.
	tenants, selected, err := s.exportedTenants(ctx, f)
	if err != nil {
		return fmt.Errorf("audit export: %w", err)
	}
	var events []audit.Event
	for _, tenant := range tenants {
		e := s.event(c, "audit.export", audit.OutcomeOK)
		e.ObjectType, e.ObjectID, e.Reason = "audit_log", format.ext, "filter: "+exportFilterText(form)
		if !slices.Contains(selected, tenant) {
			e.Reason = exportNoEntriesReason
		}
		e.Tenant = tenant
		events = append(events, e)
	}
	if _, err := audit.AppendBatchFunc(ctx, s.deps.Pool, events); err != nil {
		return fmt.Errorf("audit export: %w", err)
	}
	res := c.Response()
	err = s.writeExport(ctx, f, format, res)
	if err == nil {
		return nil
	}
	s.auditExportFailed(ctx, events, err)
	if !res.Committed {
		return fmt.Errorf("audit export: %w", err)
	}
	// Headers are gone: end the response without its end, so the download
	// fails where it is read instead of passing for a whole file (echo's
	// Recover lets http.ErrAbortHandler through to net/http).
	s.deps.Log.Error("audit export interrupted", "err", err, "request_id", res.Header().Get(echo.HeaderXRequestID))
	// What was written reaches the reader first, the line saying the
	// export stopped last among it: net/http drops what its response
	// buffer holds (up to 2 KB) when the handler aborts, which cut the file
	// mid-line before that line whenever the export's own buffer held
	// less than that when the read failed.
	_ = http.NewResponseController(res.Writer).Flush()
	panic(http.ErrAbortHandler)
}

// writeExport is what auditExport does once the export's rows say ok, so
// that each of its errors is audited beside them: it records the head as
// a checkpoint, then, in one read-only transaction under the export's
// statement timeout (exportStatementTimeout; ExportEnd's max(seq) over the
// filter is a scan of the log as large as the export's), finds the
// checkpoint the export ends at, runs the format's check and sends the
// file to res.
func (s *Server) writeExport(ctx context.Context, f audit.Filter, format exportFormat, res *echo.Response) error {
	head, err := s.deps.Checkpoints.Record(ctx, audit.ReasonExport)
	if err != nil {
		return fmt.Errorf("sign the head for the export: %w", err)
	}
	keys := s.deps.Checkpoints.Keys()
	return pgx.BeginTxFunc(ctx, s.deps.Pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL statement_timeout = %d", exportStatementTimeout.Milliseconds())); err != nil {
			return err
		}
		// An export of an old range ends at the first checkpoint of this
		// console's after its last entry, not at the head: the stubs past it
		// are then one checkpoint interval, not the whole newer log.
		end, err := audit.ExportEnd(ctx, tx, f, head, keys)
		if err != nil {
			return fmt.Errorf("find the checkpoint the export ends at: %w", err)
		}
		if format.check != nil {
			if err := format.check(ctx, tx, f, end.Seq); err != nil {
				return err
			}
		}
		h := res.Header()
		h.Set(echo.HeaderContentType, format.contentType)
		h.Set(echo.HeaderContentDisposition, fmt.Sprintf(`attachment; filename="audit-%s.%s"`, authz.Now(ctx).UTC().Format("20060102T150405Z"), format.ext))
		h.Set("Cache-Control", "no-store")
		// The checkpoint the export ends at, also in the file's last record.
		h.Set("Audit-Chain-Head", fmt.Sprintf("%d:%s", end.Seq, end.HashHex()))
		res.WriteHeader(http.StatusOK)
		return format.write(ctx, tx, f, end, res)
	})
}

// auditExportFailed records that the export events stand for failed,
// beside each of them (same tenant, filter and format), with why when the
// console can say: the export's own rows are written before it starts and
// say ok.
func (s *Server) auditExportFailed(ctx context.Context, events []audit.Event, err error) {
	failed := make([]audit.Event, len(events))
	for i, e := range events {
		e.Outcome, e.Reason = audit.OutcomeError, e.Reason+"; failed: "+quarantine.ErrorMessage(err)
		failed[i] = e
	}
	if _, aerr := audit.AppendBatchFunc(ctx, s.deps.Pool, failed); aerr != nil {
		s.deps.Log.Error("audit failed export", "err", aerr, "export_err", err)
	}
}

// exportNoEntriesReason is the reason of an export's row in a tenant of
// the exporter's it takes no entry from: its filter is not named there.
const exportNoEntriesReason = "filter: not named in this tenant (the export takes none of its entries)"

// exportedTenants are the tenants of an export of f's audit rows, and of
// those the tenants it takes entries from, whose rows name the filter: the
// filter's tenant when it has one and the exporter may export it, else the
// exporter's tenants, of which those where f selects an entry
// (audit.ExportTenants, bounded by them). "" (outside any tenant) stands
// for an export of every tenant's entries, and for one that names no
// tenant the console knows or may export; its row names the filter, read
// only by auditors of every tenant.
func (s *Server) exportedTenants(ctx context.Context, f audit.Filter) (tenants, selected []string, err error) {
	all := slices.Contains(f.Tenants, audit.AllTenants)
	switch {
	case f.Tenant != "" && all && slices.Contains(s.knownTenants(ctx), f.Tenant):
		return []string{f.Tenant}, []string{f.Tenant}, nil
	case f.Tenant != "" && !all && slices.Contains(f.Tenants, f.Tenant):
		return []string{f.Tenant}, []string{f.Tenant}, nil
	case f.Tenant != "" || all || len(f.Tenants) == 0:
		return []string{""}, []string{""}, nil
	}
	selected, err = audit.ExportTenants(ctx, s.deps.Pool, f)
	if err != nil {
		return nil, nil, err
	}
	return f.Tenants, selected, nil
}

// exportFilterText is the export's filter as its audit row says it: the
// parameters of form (auditFilterParams) that have a value, as it read
// them, in a fixed order, each as the export's trailer names a filter
// (audit.NamedFilter), nothing else of the query string. Each has one
// value: readAuditFilter refuses a filter given twice, so these are the
// values the export used.
func exportFilterText(form auditFilterForm) string {
	var named []string
	for _, p := range auditFilterParams {
		if v := *p.field(&form); v != "" {
			named = append(named, audit.NamedFilter(p.name, v))
		}
	}
	return strings.Join(named, " ")
}
