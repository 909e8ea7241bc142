package web

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/views"
)

// auditFilterForm is the auditor's filter as typed in the URL.
type auditFilterForm struct {
	views.AuditFilter
	Before, After string
	Now           time.Time         // what relative times count from
	text          map[string]string // text that cannot be stored, by field (formText)
	// Unknown are the URL's parameters that are no filter's
	// (unknownParams): the search (or an export) is refused with them.
	Unknown []string
	// Repeated are the filter's parameters the URL gives more than once
	// (sorted): refused too. The filter takes one value of each; applying
	// one of them would answer another question than the one asked (4 or
	// 5?), and an export would sign it as the whole answer.
	Repeated []string
}

// auditFilterParams are the query parameters of the audit filter, each
// with the field of the form it fills and whether surrounding spaces are
// dropped (typed text) or kept (a choice or a time, checked as it came):
// the one list readAuditFilter reads and an export's audit row names
// (exportFilterText).
var auditFilterParams = []auditFilterParam{
	{"actor", func(f *auditFilterForm) *string { return &f.Actor }, true},
	{"action", func(f *auditFilterForm) *string { return &f.Action }, true},
	{"tenant", func(f *auditFilterForm) *string { return &f.Tenant }, true},
	{"object", func(f *auditFilterForm) *string { return &f.Object }, true},
	{"message_id", func(f *auditFilterForm) *string { return &f.MessageID }, true},
	{"operation_id", func(f *auditFilterForm) *string { return &f.OperationID }, true},
	{"outcome", func(f *auditFilterForm) *string { return &f.Outcome }, false},
	{"request", func(f *auditFilterForm) *string { return &f.Request }, true},
	{"from", func(f *auditFilterForm) *string { return &f.From }, false},
	{"to", func(f *auditFilterForm) *string { return &f.To }, false},
	{"before", func(f *auditFilterForm) *string { return &f.Before }, false},
	{"after", func(f *auditFilterForm) *string { return &f.After }, false},
}

// auditFilterParam is a query parameter of the audit filter.
type auditFilterParam struct {
	name  string
	field func(*auditFilterForm) *string
	typed bool
}

// startsAuditExport says what an export as format starts, for the button
// of its refusal when another site started it (Route.Starts): the audit
// log filtered by what the link's parameters set, as the export reads them
// (readAuditFilter). Another site chose them: each is bounded, and shown
// with characters other than printable ASCII as "?".
func startsAuditExport(format string) func(echo.Context) string {
	return func(c echo.Context) string {
		form := readAuditFilter(c.QueryParams(), authz.Now(c.Request().Context()))
		var by []string
		for _, p := range auditFilterParams {
			if v := *p.field(&form); v != "" {
				by = append(by, strings.ReplaceAll(p.name, "_", " ")+" "+authz.ClientText(v, 64))
			}
		}
		if len(by) == 0 {
			return "Export the whole audit log you may export, as " + format
		}
		return "Export the audit log as " + format + ", filtered by " + strings.Join(by, ", ")
	}
}

// readAuditFilter reads the filter's parameters (auditFilterParams) from q,
// and notes the names of any others (unknownParams) and of those given
// more than once.
func readAuditFilter(q url.Values, now time.Time) auditFilterForm {
	f := auditFilterForm{Now: now}
	t := readText(q)
	known := make([]string, 0, len(auditFilterParams))
	for _, p := range auditFilterParams {
		v := t.raw(p.name)
		if p.typed {
			v = trimSpace(v)
		}
		*p.field(&f) = v
		known = append(known, p.name)
	}
	f.text = t.Errors()
	f.Unknown = unknownParams(q, known)
	f.Repeated = repeatedParams(q, known)
	return f
}

// auditUnknownFilterText says that the audit log has no filter of the
// names (unknown), and which it has.
func auditUnknownFilterText(unknown []string) string {
	known := make([]string, 0, len(auditFilterParams))
	for _, p := range auditFilterParams {
		if p.name != "before" && p.name != "after" { // the pager's
			known = append(known, p.name)
		}
	}
	return unknownFilterText("The audit log", unknown, known) +
		" Nothing was searched: without it, the search would cover more than was asked."
}

// Validate turns the form into an audit.Filter, with a message per bad field.
func (f auditFilterForm) Validate() (audit.Filter, map[string]string) {
	errs := map[string]string{}
	out := audit.Filter{
		Actor: f.Actor, Action: f.Action, Tenant: f.Tenant, Object: f.Object, MessageID: f.MessageID,
		OperationID: f.OperationID, Outcome: audit.Outcome(f.Outcome),
	}
	switch {
	case len(f.Unknown) > 0:
		errs[""] = auditUnknownFilterText(f.Unknown)
	case len(f.Repeated) > 0:
		errs[""] = repeatedFilterText(f.Repeated, "Nothing was searched: with one of the values, the search would not be the one asked.")
	}
	// "replay.*" is every action of a family.
	if family, ok := strings.CutSuffix(f.Action, ".*"); ok {
		out.Action, out.Actions = "", audit.FamilyActions(family)
		if len(out.Actions) == 0 {
			errs["action"] = "Choose one of the actions."
		}
	}
	// An object the filter cannot read says so: finding nothing would
	// read as "nothing happened to it".
	if typ, _, typed, err := audit.ParseObject(out.Object); err != nil {
		errs["object"] = "Type an id (83), or a type and an id: dead_letter 83, replay_request #4."
	} else if typed && !audit.KnownObjectType(typ) {
		errs["object"] = "No entry of the log is about a " + strconv.Quote(typ) + ". The types are " +
			strings.Join(audit.ObjectTypes, ", ") + "; or type the id alone."
	}
	if f.Request != "" {
		id, err := strconv.ParseInt(f.Request, 10, 64)
		if err != nil || id < 1 {
			errs["request"] = "The replay request link is broken; open the audit log from the request's page."
		}
		out.Request = id
	}
	if f.Outcome != "" && !out.Outcome.Valid() {
		errs["outcome"] = "Choose ok, denied or error."
	}
	out.From, out.To = timeRange(f.From, f.To, f.Now, errs)
	var err error
	if f.Before != "" {
		if out.Before, err = strconv.ParseInt(f.Before, 10, 64); err != nil || out.Before < 1 {
			errs["page"] = "The page link is broken; start from the first page."
		}
	}
	if f.After != "" {
		if out.After, err = strconv.ParseInt(f.After, 10, 64); err != nil || out.After < 1 || out.Before != 0 {
			errs["page"] = "The page link is broken; start from the first page."
		}
	}
	errs = addTextErrors(errs, f.text)
	if len(errs) == 0 {
		return out, nil
	}
	return out, errs
}

// auditScope is where the caller may read the audit log; nil Tenants
// means all of them.
func (s *Server) auditScope(c echo.Context, act string) []string {
	sc := s.deps.Access.Scope(userOf(c), authz.ObjAudit, act, s.knownTenants(c.Request().Context()))
	if sc.All {
		return nil
	}
	return append([]string{}, sc.Tenants...)
}

func (s *Server) auditList(c echo.Context) error {
	ctx := c.Request().Context()
	form := readAuditFilter(c.QueryParams(), authz.Now(c.Request().Context()))
	f, errs := form.Validate()
	m := views.AuditListModel{
		Action: "/audit", Filter: form.AuditFilter, Errors: errs,
		Outcomes: []string{string(audit.OutcomeOK), string(audit.OutcomeDenied), string(audit.OutcomeError)},
		Actions:  auditActionChoices(), Presets: presetLinks(views.PathAudit, c.QueryParams()),
	}
	scope := s.auditScope(c, authz.ActRead)
	m.CanVerify = scope == nil
	var err error
	if scope == nil {
		m.Tenants = s.knownTenants(ctx)
	} else {
		m.Tenants = scope
		if m.Keys, err = publicKeys(s.deps.AuditKeys); err != nil {
			return err
		}
	}
	if m.Checkpoint, err = latestCheckpoint(ctx, s.deps.Pool, s.deps.AuditKeys, scope == nil); err != nil {
		return err
	}
	status := http.StatusOK
	if errs != nil {
		status = http.StatusUnprocessableEntity
	} else {
		f.Tenants = scope
		if f.Tenants == nil {
			f.Tenants = []string{audit.AllTenants}
		}
		if err := s.requestItems(ctx, &f); err != nil {
			return err
		}
		pg, err := audit.List(ctx, s.deps.Pool, f)
		if err != nil {
			return err
		}
		for _, e := range pg.Entries {
			m.Rows = append(m.Rows, auditRow(e))
		}
		q := c.QueryParams()
		if pg.HasNext {
			m.NextURL = pageURL("/audit", q, "before", pg.NextBefore)
		}
		if pg.HasPrev {
			m.PrevURL = pageURL("/audit", q, "after", pg.PrevAfter)
		}
		exportQ := withInstants(withoutPaging(q), f)
		m.ExportCSVURL = "/audit/export.csv" + encodeQuery(exportQ)
		m.ExportJSONLURL = "/audit/export.jsonl" + encodeQuery(exportQ)
	}
	return s.render(c, status, views.AuditList(s.page(c, "Audit log", "audit"), m))
}

// requestItems reads the dead letters of f's replay request
// (audit.Filter.RequestItems), whose entries its items' events are filed
// under; nothing when f names none.
func (s *Server) requestItems(ctx context.Context, f *audit.Filter) error {
	if f.Request == 0 {
		return nil
	}
	var err error
	f.RequestItems, err = s.deps.Replays.ItemDeadLetters(ctx, f.Request)
	return err
}

// latestCheckpoint is the newest head signed with one of keys (the keys
// "Verify chain" trusts) and, for a reader of every tenant (everyTenant),
// how many entries follow it, with the newer checkpoints that do not
// verify, if any; nil when there is no checkpoint at all. A checkpoint
// anyone with the runtime role's credentials inserted is never shown as
// signed (audit.LatestVerifiedCheckpoint). The count is of every tenant's
// entries: to a reader of some it is the others' activity since, which
// they cannot read otherwise (as the dashboard hides the stream's volume
// from them), and nothing they can act on (signing is the console's).
func latestCheckpoint(ctx context.Context, db audit.Querier, keys *audit.KeySet, everyTenant bool) (*views.AuditCheckpoint, error) {
	vc, err := audit.LatestVerifiedCheckpoint(ctx, db, keys)
	if err != nil || (!vc.OK && vc.Unverified == 0) {
		return nil, err
	}
	cp := vc.Checkpoint
	out := &views.AuditCheckpoint{Verified: vc.OK, Unverified: vc.Unverified, NewestUnverified: vc.NewestUnverified, OthersHidden: !everyTenant}
	if everyTenant {
		head, err := audit.Head(ctx, db)
		if err != nil {
			return nil, err
		}
		out.Since = head.Seq - cp.Seq
	}
	if vc.OK {
		out.Seq, out.Hash, out.At, out.Reason, out.KeyID = cp.Seq, cp.HashHex(), cp.At, cp.Reason, cp.KeyID
	}
	return out, nil
}

// auditActionChoices are the action filter's choices: every action the
// console records (audit.Families, the one list of them).
func auditActionChoices() []views.ActionChoices {
	var out []views.ActionChoices
	for _, f := range audit.Families() {
		out = append(out, views.ActionChoices{Family: f.Name, Actions: f.Actions})
	}
	return out
}

func auditRow(e audit.Entry) views.AuditRow {
	actor := e.Actor.Display()
	if actor == "" {
		actor = "system"
	}
	return views.AuditRow{
		Seq: e.Seq, At: e.At, Actor: actor, Tenant: e.Tenant, Action: e.Action, ObjectType: e.ObjectType,
		ObjectID: e.ObjectID, MessageID: e.MessageID, OperationID: e.OperationID, Outcome: string(e.Outcome), Reason: e.Reason,
		URL: "/audit/" + strconv.FormatInt(e.Seq, 10), ObjectURL: objectURL(e), ObjectText: draftObjectText(e), MessageURL: messageURL(e), OperationURL: operationURL(e),
	}
}

// emailLabel is an email where a page shows it as such, beside the
// identity it belongs to (a person is named by quarantine.Actor.Display,
// which marks it the same way): an address the identity provider did not
// verify says so, because anyone may claim any address at a provider that
// does not check (it never identifies anyone either).
func emailLabel(email string, verified bool) string {
	if email == "" || verified {
		return email
	}
	return email + " (unverified)"
}

// withInstants is q with its time bounds as the instants f resolved them
// to (RFC 3339, to the nanosecond): a relative time ("now-1h", the "Last
// 1 h" preset) is read again whenever a link carrying it is followed, so
// an export link that kept it would export another window than the page
// showed. The page's own address keeps it relative (a shared link means
// "the last hour" whenever it is opened).
func withInstants(q url.Values, f audit.Filter) url.Values {
	for name, t := range map[string]time.Time{"from": f.From, "to": f.To} {
		if !t.IsZero() {
			q.Set(name, t.UTC().Format(time.RFC3339Nano))
		}
	}
	return q
}

func withoutPaging(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		if k != "before" && k != "after" && len(v) > 0 && v[0] != "" {
			out[k] = v
		}
	}
	return out
}

func pageURL(path string, q url.Values, key string, v int64) string {
	out := withoutPaging(q)
	out.Set(key, strconv.FormatInt(v, 10))
	return path + encodeQuery(out)
}

func encodeQuery(q url.Values) string {
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}
