package audit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// Page sizes for List and ForObject.
const (
	DefaultLimit = 50
	MaxLimit     = 1000
)

// AllTenants in Filter.Tenants (or a nil Tenants) lets the viewer see every
// tenant, including entries outside any tenant.
const AllTenants = "*"

// Filter selects entries for the auditor's pages and the exports. Zero fields
// do not filter.
type Filter struct {
	// Actor is an actor subject (exact), or an email the provider verified,
	// compared by its key (replaypolicy.EmailKey, as email bindings are: in
	// any ASCII case, Jane.Doe@Example.com is jane.doe@example.com); an
	// address that is not all ASCII, which has no key, matches a verified
	// email exactly as recorded, byte for byte.
	Actor  string
	Action string
	// Actions, when not empty, keeps entries of any of these actions (a
	// family, "replay.*", as FamilyActions lists it).
	Actions    []string
	Tenant     string
	ObjectType string
	ObjectID   string
	// Object is an object as the auditor types it: its id, or its type and
	// id as the log shows them ("dead_letter 83") or as "dead_letter:83",
	// or as the console's pages name it ("replay_request #4", "Dead letter
	// #138", "#4"): see ParseObject. Typed with a type, it matches that
	// object, or an entry whose whole object id is the text. A dead
	// letter's id (typed so, or alone) also matches the refused bulk
	// selections that list it (condRefused), whose object id names their
	// first ten ids only. Text ParseObject cannot read is invalid.
	Object string
	// MessageID matches the entries whose message id is this one (as a
	// dead letter holds it, however long: compared as MessageKey): never
	// an entry whose object id merely reads the same (dead letter #17 is
	// not message "17", an export of "csv" is no message "csv").
	MessageID string
	// OperationID matches the entries whose operation id is this one (as
	// a dead letter holds it, however long: compared as OperationKey),
	// whatever message id they name: one operation may have been
	// dead-lettered, and replayed, under several.
	OperationID string
	Outcome     Outcome
	// Request is a replay request id (0: none): the entries of the request
	// itself (object replay_request Request) and of its items, filed under
	// their dead letters (RequestItems: the dead letter ids of its items,
	// which the caller reads) with the request in their after data (an
	// item's submission, edit, publish, cancel, settlement).
	Request      int64
	RequestItems []int64
	From         time.Time // at >= From
	To           time.Time // at < To
	// Tenants are the tenants the viewer may see: nil or a list holding
	// AllTenants means all of them, an empty non-nil list means none. Entries
	// with no tenant are only visible to viewers of all tenants.
	Tenants []string
	// Limit is the page size for List: 0 means DefaultLimit, at most
	// MaxLimit. The exports ignore it.
	Limit int
	// Before and After are keyset cursors (at most one of them): Before
	// returns the page of entries older than seq Before (Page.NextBefore),
	// After the page newer than seq After (Page.PrevAfter).
	Before int64
	After  int64
}

// Validate reports the first broken rule as an invalid quarantine.Error.
func (f *Filter) Validate() error {
	switch {
	case f.Outcome != "" && !f.Outcome.Valid():
		return quarantine.Errorf(quarantine.EINVALID, "outcome %q is not one of ok, denied, error", f.Outcome)
	case f.Request < 0:
		return quarantine.Errorf(quarantine.EINVALID, "request %d is not a replay request id", f.Request)
	case f.Limit < 0 || f.Limit > MaxLimit:
		return quarantine.Errorf(quarantine.EINVALID, "limit %d is not between 1 and %d", f.Limit, MaxLimit)
	case f.Before < 0 || f.After < 0:
		return quarantine.Errorf(quarantine.EINVALID, "a page cursor cannot be negative")
	case f.Before != 0 && f.After != 0:
		return quarantine.Errorf(quarantine.EINVALID, "before and after cannot both be set")
	case !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To):
		return quarantine.Errorf(quarantine.EINVALID, "from must be before to")
	}
	if _, _, _, err := ParseObject(f.Object); err != nil {
		return err
	}
	return nil
}

// Page is one page of List, newest entry first.
type Page struct {
	Entries    []Entry
	NextBefore int64 // Filter.Before for the next (older) page, when HasNext
	PrevAfter  int64 // Filter.After for the previous (newer) page, when HasPrev
	HasNext    bool
	HasPrev    bool
}

// Filter conditions. Each is constant SQL with named arguments; where joins
// those a Filter needs, so each combination gets a plan that can use its
// index (one query with "col = @x OR @x is empty" for every field could not).
const (
	// An email identifies nobody unless the provider verified it: anyone
	// can claim an address at a provider that does not check. Entries from
	// before this was recorded (NULL) match by subject only. An email
	// matches by its key (replaypolicy.EmailKey: ASCII case only, as the
	// bindings page shows and matches addresses), given as @actor_key: the
	// translate is that rule, exactly, and keeps out an address that is not
	// ASCII (lower() maps İ to i in most locales); lower() lets the
	// lower(actor_email) index (migration 0041) find the candidates. A
	// subject is the provider's and matches exactly.
	condActor = `((lower(actor_email) = @actor_key::text AND translate(actor_email, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz') = @actor_key
	        AND actor_email <> '' AND actor_email_verified) OR (actor_subject = @actor AND actor_subject <> ''))`
	// condActorExact is condActor for an actor text without an email key
	// (not all ASCII): a subject, or a verified email exactly as recorded,
	// byte for byte. A filter grants nothing, so exactness is safe, and
	// no other spelling of the address finds it (ops@kİwİ.example never
	// finds ops@kiwi.example). The lower() of both sides is implied by
	// the equality and lets the lower(actor_email) index find the
	// candidates.
	condActorExact = `((lower(actor_email) = lower(@actor::text) AND actor_email = @actor AND actor_email <> '' AND actor_email_verified)
	        OR (actor_subject = @actor AND actor_subject <> ''))`
	// The <> '' lets the partial message_id index serve it. Only the
	// message_id column: every entry about a message (a dead letter) names
	// it there, and an object id is an id of its own type.
	condMessage = `(message_id = @message_id AND message_id <> '')`
	// The <> '' lets the partial operation_id index (migration 0054)
	// serve it.
	condOperation  = `(operation_id = @operation_id AND operation_id <> '')`
	condAction     = `action = @action`
	condActions    = `action = ANY(@actions)`
	condTenant     = `tenant = @tenant`
	condObjectType = `object_type = @object_type`
	condObjectID   = `object_id = @object_id`
	// Both branches read the object index by object_id.
	condObjectTyped = `((object_type = @object_type AND object_id = @object_id) OR object_id = @object)`
	// condRefused is a refused bulk selection that lists the dead letter
	// @refused (refusedIDs), read from its own index (migration 0069): the
	// Object filter of a dead letter's id adds it to the object's own
	// conditions (objectCond).
	condRefused = `(object_type = 'dead_letter' AND outcome = 'denied' AND ` + refusedIDs + ` @> jsonb_build_array(@refused::bigint))`
	// Both branches read the object index by object_id: the request's own
	// entries, and its items' (their dead letters', only those naming it).
	condRequest = `((object_type = 'replay_request' AND object_id = @request)
	        OR (object_id = ANY(@request_items) AND object_type = 'dead_letter' AND after->>'request' = @request))`
	condOutcome = `outcome = @outcome`
	condNotOK   = `outcome <> 'ok'` // implied by denied or error; lets the partial outcome index serve them
	condFrom    = `at >= @from`
	condTo      = `at < @to`
	// The entries' times grow with seq (Append takes clock_timestamp()
	// under the chain's lock, and verify flags an entry dated before its
	// predecessor), but PostgreSQL does not know it: a page newest first
	// bounded only on at walks seq down from the head through every entry
	// newer than the bound. These turn a time bound into a seq bound, read
	// once from the at index, so the page starts where its time does; the
	// time conditions stay, so no entry outside the range is ever shown.
	condFromSeq  = `seq >= coalesce((SELECT seq FROM audit_log WHERE at >= @from ORDER BY at, seq LIMIT 1), 9223372036854775807)`
	condToSeq    = `seq < coalesce((SELECT seq FROM audit_log WHERE at >= @to ORDER BY at, seq LIMIT 1), 9223372036854775807)`
	condTenants  = `tenant = ANY(@tenants)`
	condOlder    = `seq < @cursor`
	condNewer    = `seq > @cursor`
	condUpToHead = `seq <= @head`
)

// refusedIDs are the ids of dead letters a denied row of a refused bulk
// selection (dlq.RefusedIDs) lists in after.refused by reason, flattened
// into one array: its object id names only the first ten, so a dead letter
// is found in it by this, exactly as migration 0069 indexes it (an
// expression written otherwise is not served by that index). Ids past the
// row's first 1,000 are not listed, and not found: its reason counts them.
const refusedIDs = `jsonb_path_query_array(after -> 'refused', '$.*[*]')`

const (
	selectEntries = `SELECT ` + entryColumns + ` FROM audit_log WHERE `
	newestFirst   = ` ORDER BY seq DESC LIMIT @limit`
	oldestFirst   = ` ORDER BY seq LIMIT @limit`
	existsEntries = `SELECT EXISTS (SELECT 1 FROM audit_log WHERE `
)

// where returns the conditions and arguments of f without its cursor, and
// false when the viewer may see no tenant at all.
func (f *Filter) where() (conds []string, args pgx.NamedArgs, visible bool) {
	s := f.selection()
	return s.conds, s.args, s.visible
}

// selection is what a Filter selects: the conditions of its query, their
// arguments, and each filter as an export's signed trailer names it
// (filterText). A filter is added by add, which takes its name and value
// with its conditions: no filter selects without being named, and the
// trailer can leave none out.
type selection struct {
	conds   []string
	args    pgx.NamedArgs
	named   []string
	visible bool // false when the viewer may see no tenant at all
}

// add adds the filter name (its value as the viewer gave it) with its
// conditions and their arguments.
func (s *selection) add(name, value string, args pgx.NamedArgs, conds ...string) {
	s.named = append(s.named, NamedFilter(name, value))
	s.conds = append(s.conds, conds...)
	maps.Copy(s.args, args)
}

// NamedFilter is a filter of the log as an export names it: name="value",
// the value quoted as Go quotes it (a quote, a backslash, a line break or
// a character that is not printable escaped), so that the names of several
// read apart whatever their values hold. An export's trailer (filterText)
// and its audit row (web's exportFilterText) write their filters so, each
// separated by a space.
func NamedFilter(name, value string) string { return name + "=" + strconv.Quote(value) }

// listValue is the value of a filter of several names (tenants,
// actions) as NamedFilter is given it: joined by commas, or, when any name
// holds a comma, a quote or a backslash (a tenant may be named
// "acme,globex"), each quoted as Go quotes it, then joined: a list of one
// such name never reads as a list of several, and a plain list (no name
// holding a quote) never starts with one.
func listValue(names []string) string {
	if !slices.ContainsFunc(names, func(n string) bool { return strings.ContainsAny(n, `,"\`) }) {
		return strings.Join(names, ",")
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n)
	}
	return strings.Join(quoted, ",")
}

// selection returns the selection of f without its cursor: what List
// pages through.
func (f *Filter) selection() *selection {
	s := &selection{args: pgx.NamedArgs{}, visible: true}
	if f.Tenants != nil && !slices.Contains(f.Tenants, AllTenants) {
		// Entries without a tenant are for viewers of all tenants only.
		tenants := slices.DeleteFunc(slices.Clone(f.Tenants), func(t string) bool { return t == "" })
		if len(tenants) == 0 {
			s.named, s.visible = append(s.named, "tenants=none"), false
			return s
		}
		s.add("tenants", listValue(tenants), pgx.NamedArgs{"tenants": tenants}, condTenants)
	}
	if key, ok := replaypolicy.EmailKey(f.Actor); ok {
		s.add("actor", f.Actor, pgx.NamedArgs{"actor": f.Actor, "actor_key": key}, condActor)
	} else if f.Actor != "" {
		s.add("actor", f.Actor, pgx.NamedArgs{"actor": f.Actor}, condActorExact)
	}
	if f.Action != "" {
		s.add("action", f.Action, pgx.NamedArgs{"action": f.Action}, condAction)
	}
	if len(f.Actions) > 0 {
		s.add("actions", listValue(f.Actions), pgx.NamedArgs{"actions": f.Actions}, condActions)
	}
	if f.Tenant != "" {
		s.add("tenant", f.Tenant, pgx.NamedArgs{"tenant": f.Tenant}, condTenant)
	}
	if f.ObjectType != "" {
		s.add("object_type", f.ObjectType, pgx.NamedArgs{"object_type": f.ObjectType}, condObjectType)
	}
	if f.ObjectID != "" {
		s.add("object_id", f.ObjectID, pgx.NamedArgs{"object_id": f.ObjectID}, condObjectID)
	}
	if f.Object != "" {
		// Validate refused what ParseObject cannot read.
		typ, id, typed, _ := ParseObject(f.Object)
		args := pgx.NamedArgs{"object_id": id}
		cond := condObjectID
		if typed {
			args["object"], args["object_type"], cond = strings.TrimSpace(f.Object), typ, condObjectTyped
		}
		if refused, ok := deadLetterOf(typ, id, typed); ok {
			args["refused"], cond = refused, `(`+cond+` OR `+condRefused+`)`
		}
		s.add("object", f.Object, args, cond)
	}
	if f.MessageID != "" {
		s.add("message_id", f.MessageID, pgx.NamedArgs{"message_id": MessageKey(f.MessageID)}, condMessage)
	}
	if f.Request != 0 {
		items := make([]string, len(f.RequestItems))
		for i, id := range f.RequestItems {
			items[i] = strconv.FormatInt(id, 10)
		}
		request := strconv.FormatInt(f.Request, 10)
		s.add("request", request, pgx.NamedArgs{"request": request, "request_items": items}, condRequest)
	}
	if f.OperationID != "" {
		s.add("operation_id", f.OperationID, pgx.NamedArgs{"operation_id": OperationKey(f.OperationID)}, condOperation)
	}
	switch f.Outcome {
	case "":
	case OutcomeOK:
		s.add("outcome", string(f.Outcome), pgx.NamedArgs{"outcome": string(f.Outcome)}, condOutcome)
	default:
		s.add("outcome", string(f.Outcome), pgx.NamedArgs{"outcome": string(f.Outcome)}, condOutcome, condNotOK)
	}
	if !f.From.IsZero() {
		s.add("from", f.From.UTC().Format(timeLayout), pgx.NamedArgs{"from": f.From}, condFrom, condFromSeq)
	}
	if !f.To.IsZero() {
		s.add("to", f.To.UTC().Format(timeLayout), pgx.NamedArgs{"to": f.To}, condTo, condToSeq)
	}
	return s
}

func whereSQL(conds []string, extra ...string) string {
	all := append(slices.Clip(conds), extra...)
	if len(all) == 0 {
		return "TRUE"
	}
	return strings.Join(all, " AND ")
}

// List returns one page of the entries f selects, newest first, paged by seq
// (keyset, no OFFSET). It returns an invalid quarantine.Error for an invalid
// f.
func List(ctx context.Context, db Querier, f Filter) (Page, error) {
	if err := f.Validate(); err != nil {
		return Page{}, fmt.Errorf("list audit entries: %w", err)
	}
	limit := f.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	conds, args, visible := f.where()
	if !visible {
		return Page{}, nil
	}
	// One more row than the page tells whether there is more that way.
	args["limit"] = limit + 1
	var sql string
	switch {
	case f.After != 0:
		args["cursor"] = f.After
		sql = selectEntries + whereSQL(conds, condNewer) + oldestFirst
	case f.Before != 0:
		args["cursor"] = f.Before
		sql = selectEntries + whereSQL(conds, condOlder) + newestFirst
	default:
		sql = selectEntries + whereSQL(conds) + newestFirst
	}
	rows, err := db.Query(ctx, sql, args)
	if err != nil {
		return Page{}, fmt.Errorf("list audit entries: %w", err)
	}
	entries, err := pgx.CollectRows(rows, scanEntry)
	if err != nil {
		return Page{}, fmt.Errorf("list audit entries: %w", err)
	}
	more := len(entries) > limit
	if more {
		entries = entries[:limit]
	}
	var p Page
	if f.After != 0 {
		slices.Reverse(entries)
		p.HasPrev = more
	} else {
		p.HasNext = more
	}
	p.Entries = entries

	// The other direction: is there anything past the edge of this page (or
	// past the cursor, for an empty page)?
	var cond string
	var edge int64
	switch {
	case f.After != 0 && len(entries) > 0:
		cond, edge = condOlder, entries[len(entries)-1].Seq
	case f.After != 0:
		cond, edge = condOlder, f.After+1
	case f.Before != 0 && len(entries) > 0:
		cond, edge = condNewer, entries[0].Seq
	case f.Before != 0:
		cond, edge = condNewer, f.Before-1
	}
	if cond != "" {
		args["cursor"] = edge // the named arguments the query does not use are ignored
		var exists bool
		if err := db.QueryRow(ctx, existsEntries+whereSQL(conds, cond)+`)`, args).Scan(&exists); err != nil {
			return Page{}, fmt.Errorf("list audit entries: look past the page: %w", err)
		}
		if f.After != 0 {
			p.HasNext = exists
		} else {
			p.HasPrev = exists
		}
	}
	if p.HasNext && len(entries) > 0 {
		p.NextBefore = entries[len(entries)-1].Seq
	} else if p.HasNext {
		p.NextBefore = f.After + 1
	}
	if p.HasPrev && len(entries) > 0 {
		p.PrevAfter = entries[0].Seq
	} else if p.HasPrev {
		p.PrevAfter = f.Before - 1
	}
	return p, nil
}

// errNoEntry answers for an entry that does not exist or is not the
// viewer's to see: the same answer for both.
var errNoEntry = quarantine.Errorf(quarantine.ENOTFOUND, "There is no such audit event.")

const getEntry = `SELECT ` + entryColumns + ` FROM audit_log WHERE seq = $1`

// Get returns the entry seq. It returns a not_found quarantine.Error when there is none, or
// when its tenant is not among tenants (same rules as Filter.Tenants), so a
// viewer cannot learn that another tenant's entry exists.
func Get(ctx context.Context, db Querier, seq int64, tenants []string) (Entry, error) {
	rows, err := db.Query(ctx, getEntry, seq)
	if err != nil {
		return Entry{}, fmt.Errorf("get audit entry %d: %w", seq, err)
	}
	e, err := pgx.CollectExactlyOneRow(rows, scanEntry)
	if errors.Is(err, pgx.ErrNoRows) {
		return Entry{}, fmt.Errorf("get audit entry %d: %w", seq, errNoEntry)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("get audit entry %d: %w", seq, err)
	}
	if !mayView(tenants, e.Tenant) {
		return Entry{}, fmt.Errorf("get audit entry %d: %w", seq, errNoEntry)
	}
	return e, nil
}

const selectTenant = `SELECT tenant FROM audit_log WHERE seq = $1`

// TenantOf returns the tenant of entry seq ("" for one outside any tenant),
// or not_found.
func TenantOf(ctx context.Context, db Querier, seq int64) (string, error) {
	var tenant string
	err := db.QueryRow(ctx, selectTenant, seq).Scan(&tenant)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("tenant of audit entry %d: %w", seq, errNoEntry)
	}
	if err != nil {
		return "", fmt.Errorf("tenant of audit entry %d: %w", seq, err)
	}
	return tenant, nil
}

func mayView(tenants []string, tenant string) bool {
	if tenants == nil || slices.Contains(tenants, AllTenants) {
		return true
	}
	return tenant != "" && slices.Contains(tenants, tenant)
}

// The newest entries of the object in every tenant and none, returned
// oldest first.
const objectEntries = `
SELECT * FROM (
    SELECT ` + entryColumns + ` FROM audit_log
    WHERE object_type = $1 AND object_id = $2
    ORDER BY seq DESC LIMIT $3
) AS recent ORDER BY seq`

// The newest entries of the object in its own tenant, returned oldest
// first. An entry outside any tenant, or in another, that names the same
// type and id is not the object's: a refusal of an id no dead letter had
// yet (written outside any tenant by earlier releases, and by anyone of
// any tenant who guessed the next id) is for auditors of every tenant, and
// another tenant's denial is that tenant's.
// Refusals (objectRefusals) are read apart, so that the object's history
// is never pushed out by them: anyone who can guess an id can write as
// many as they like (each probe of another tenant's dead letter is one),
// and the trail keeps the newest TrailDenied of them.
const objectTrail = `
SELECT * FROM (
    SELECT ` + entryColumns + ` FROM audit_log
    WHERE object_type = $1 AND object_id = $2 AND tenant = $4 AND outcome <> 'denied'
    ORDER BY seq DESC LIMIT $3
) AS recent ORDER BY seq`

// The newest refusals of the object in its own tenant, returned oldest
// first, as objectTrail reads its other entries; of a dead letter ($5, NULL
// for any other object), the refused bulk selections of its tenant that
// list it too (condRefused: their object id names their first ten ids
// only), each read from its index.
const objectRefusals = `
SELECT * FROM (
    SELECT ` + entryColumns + ` FROM audit_log
    WHERE ((object_type = $1 AND object_id = $2)
           OR (object_type = 'dead_letter' AND ` + refusedIDs + ` @> jsonb_build_array($5::bigint)))
      AND tenant = $4 AND outcome = 'denied'
    ORDER BY seq DESC LIMIT $3
) AS recent ORDER BY seq`

// deadLetterOf returns the dead letter an object may be, as a refused bulk
// selection lists it (condRefused): a dead letter's id, or an id alone
// (which matches an object of any type). ok is false for any other object,
// and for an id written otherwise than a dead letter's ("+18", "018"),
// which no object id matches either.
func deadLetterOf(typ, id string, typed bool) (int64, bool) {
	if typed && typ != "dead_letter" {
		return 0, false
	}
	n, err := strconv.ParseInt(id, 10, 64)
	return n, err == nil && n > 0 && strconv.FormatInt(n, 10) == id
}

// TrailDenied is how many refusals of an object its trail shows (Trail),
// the newest; the audit log shows them all.
const TrailDenied = 10

// ForObject returns every entry naming one object (say, a dead letter): its
// most recent limit entries (0 means DefaultLimit, at most MaxLimit),
// oldest first, in every tenant and outside any. It is for readers of the
// whole log; a tenant's page of its object reads Trail, which keeps to the
// object's tenant.
func ForObject(ctx context.Context, db Querier, objectType, objectID string, limit int) ([]Entry, error) {
	if limit < 0 || limit > MaxLimit {
		return nil, fmt.Errorf("audit trail of %s %s: %w", objectType, objectID, quarantine.Errorf(quarantine.EINVALID, "limit %d is not between 1 and %d", limit, MaxLimit))
	}
	if limit == 0 {
		limit = DefaultLimit
	}
	rows, err := db.Query(ctx, objectEntries, objectType, objectID, limit)
	if err != nil {
		return nil, fmt.Errorf("audit trail of %s %s: %w", objectType, objectID, err)
	}
	entries, err := pgx.CollectRows(rows, scanEntry)
	if err != nil {
		return nil, fmt.Errorf("audit trail of %s %s: %w", objectType, objectID, err)
	}
	return entries, nil
}

// The newest entries naming a message id in one tenant, returned oldest
// first. Only the message_id column: an entry whose object id equals the
// message id is about another object (dead letter #17 for message "17",
// an audit export for message "csv"), and the trail's reader may not even
// be allowed to read it.
//
// A message id is a message's on its subject (replaypolicy.Identity): an
// entry about a dead letter ($4, the trail's own, when the trail is a dead
// letter's) that has the same message id ($5, as the dead letters hold it)
// on another original subject is about another message, and is left out
// (TestRevAudit21TrailShowsAnotherSubjectsMessageAsThisOne). Those dead
// letters are found by the message id, once per statement: the hash index
// on left(msg_id, 256) is probed once in each partition and the ids are
// kept in a hashed subplan that each entry is checked against. Looking up
// each entry's dead letter by id instead probes every partition's primary
// key per entry (the id alone does not prune, dead_lettered_at is the
// partition key), and the planner took a materialised scan of every
// partition for it (60 days of 1,000 dead letters: 2.9 s against 3.4 ms).
// The trail's own subject is read by id (one probe per partition). An
// entry about a dead letter no longer kept (its day purged) stays: its
// subject cannot be told, and it names its object (the page says which
// dead letter it is about). So does every entry about another kind of
// object (no other kind carries a message id today). With no such dead
// letter ($4 NULL, or not found in the tenant), nothing is left out.
const messageTrail = `
SELECT * FROM (
    SELECT ` + entryColumns + ` FROM audit_log
    WHERE message_id = $1 AND message_id <> '' AND tenant = $2
      AND (object_type <> 'dead_letter' OR object_id NOT IN (
          SELECT o.id::text FROM dead_letters o
          WHERE left(o.msg_id, 256) = left($5, 256) AND o.msg_id = $5 AND o.tenant = $2
            AND o.original_subject <> (SELECT original_subject FROM dead_letters WHERE id = $4 AND tenant = $2)))
    ORDER BY seq DESC LIMIT $3
) AS recent ORDER BY seq`

// Batcher sends batches of statements: *pgxpool.Pool is one.
type Batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Trail returns the trail of one object of tenant that carries a message
// (a dead letter): its own most recent limit entries in tenant that are not
// refusals, its most recent TrailDenied refusals there (so that probes of
// it never push its history out; of a dead letter, those of the refused
// bulk selections that list it too), and the most recent limit entries naming
// messageID in tenant, each once, oldest first, read in one round trip.
// Of the entries naming messageID, those about another dead letter of the
// tenant with that message id on another original subject than the
// object's (a dead letter's) are left out: they are about another message
// (messageTrail). Entries outside any tenant are never in
// it, whoever reads it: an auditor of every tenant finds them in the log.
// The caller has already checked that the viewer may see the object.
func Trail(ctx context.Context, db Batcher, objectType, objectID, messageID, tenant string, limit int) ([]Entry, error) {
	if limit < 0 || limit > MaxLimit {
		return nil, fmt.Errorf("audit trail of %s %s: %w", objectType, objectID, quarantine.Errorf(quarantine.EINVALID, "limit %d is not between 1 and %d", limit, MaxLimit))
	}
	if limit == 0 {
		limit = DefaultLimit
	}
	// A dead letter's trail leaves out entries of its message about
	// another dead letter on another subject (messageTrail), and takes in
	// the refused selections that list it (objectRefusals); nil, SQL NULL,
	// for any other object.
	var deadLetter *int64
	if n, ok := deadLetterOf(objectType, objectID, true); ok {
		deadLetter = &n
	}
	var byObject, denied, byMessage []Entry
	b := &pgx.Batch{}
	b.Queue(objectTrail, objectType, objectID, limit, tenant).Query(func(rows pgx.Rows) error {
		var err error
		byObject, err = pgx.CollectRows(rows, scanEntry)
		return err
	})
	b.Queue(objectRefusals, objectType, objectID, min(limit, TrailDenied), tenant, deadLetter).Query(func(rows pgx.Rows) error {
		var err error
		denied, err = pgx.CollectRows(rows, scanEntry)
		return err
	})
	if messageID != "" {
		b.Queue(messageTrail, MessageKey(messageID), tenant, limit, deadLetter, messageID).Query(func(rows pgx.Rows) error {
			var err error
			byMessage, err = pgx.CollectRows(rows, scanEntry)
			return err
		})
	}
	if err := db.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("audit trail of %s %s: %w", objectType, objectID, err)
	}
	seen := map[int64]bool{}
	var out []Entry
	for _, e := range slices.Concat(byObject, denied, byMessage) {
		if !seen[e.Seq] {
			seen[e.Seq] = true
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}

// ObjectTypes are the object types entries of the log name, the one list
// the audit filter checks a typed type against (a type no entry has finds
// nothing, which reads as "nothing happened to it"). A new ObjectType an
// Event carries is added here.
var ObjectTypes = []string{
	"audit_checkpoint", "audit_entry", "audit_log", "dead_letter", "dead_letters", "dead_letters_purged", "error_group",
	"fix_marker", "identity_addresses", "person", "replay_batch", "replay_policy", "replay_request", "retention_terms", "role_binding", "route",
	"session", "user_settings",
}

// objectAliases are the console's own words for object types, as people
// type them: "request 4" is the page "Replay request 4", "group" an error
// group.
var objectAliases = map[string]string{"request": "replay_request", "group": "error_group"}

// KnownObjectType reports whether some entry of the log may name typ
// (ObjectTypes).
func KnownObjectType(typ string) bool { return slices.Contains(ObjectTypes, typ) }

// objectTypePattern is what an object type looks like ("dead_letter",
// "replay_request", "route"): only such a word before the separator makes
// SplitObject read a type.
var objectTypePattern = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// ParseObject reads an object as an auditor types it into the log's
// Object filter: as the log shows it, "dead_letter 83" or "dead_letter:83"
// (SplitObject); as the console's pages name it, "replay_request #4",
// "replay_request: #4", "Dead letter #138" (a label of words before the
// "#" is the type, its words joined by "_" in lower case); or an id alone,
// "83" or "#83". typed is false for an id alone. It returns an invalid
// quarantine.Error, saying how to write an object, for text it cannot
// read: a "#" with nothing after it, or after something that is no type.
// An empty text is no object (no error). The console's own words for a
// type (objectAliases: "request 4") read as the type the log names.
func ParseObject(text string) (typ, id string, typed bool, err error) {
	typ, id, typed, err = parseObject(text)
	if alias, ok := objectAliases[typ]; ok {
		typ = alias
	}
	return typ, id, typed, err
}

func parseObject(text string) (typ, id string, typed bool, err error) {
	text = labelled(strings.TrimSpace(text))
	if text == "" {
		return "", "", false, nil
	}
	if typ, id, ok := SplitObject(text); ok {
		if rest, hashed := strings.CutPrefix(id, "#"); hashed {
			id = strings.TrimSpace(rest)
			if id == "" {
				return "", "", false, errObjectForm(text)
			}
		}
		return typ, id, true, nil
	}
	label, rest, hashed := strings.Cut(text, "#")
	if !hashed {
		return "", text, false, nil
	}
	id = strings.TrimSpace(rest)
	label = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(label), ":"))
	if id == "" {
		return "", "", false, errObjectForm(text)
	}
	if label == "" {
		return "", id, false, nil
	}
	typ = strings.ToLower(strings.Join(strings.Fields(label), "_"))
	if !objectTypePattern.MatchString(typ) {
		return "", "", false, errObjectForm(text)
	}
	return typ, id, true, nil
}

// labelled reads an object typed as a label of words and an id, with
// or without a "#" between them ("Dead letter 138", "replay request #4",
// as a person types what a page heads "Dead letter #138"), written as
// the log names it ("dead_letter 138"): the label's words joined by "_"
// in lower case, as ParseObject reads a label before a "#". Without
// it the whole text would be looked up as one id ("Dead letter 138"), or
// a label's first word taken for the type ("replay" of "replay request
// #4"), and nothing found. Any other text is returned as it is; so is a
// label of one word and an id with no "#" between them ("Order 83", an
// id; "dead_letter 83" SplitObject reads).
func labelled(text string) string {
	label, id, hashed := strings.Cut(text, "#")
	words := strings.Fields(label)
	if !hashed {
		// Without a "#", only a label of several words is one ("Order
		// 83" stays an id, as the log may hold such an id).
		if strings.Contains(text, ":") || len(words) < 3 {
			return text
		}
		id, words = words[len(words)-1], words[:len(words)-1]
	}
	id = strings.TrimSpace(id)
	if len(words) == 0 || id == "" || strings.Trim(id, "0123456789") != "" {
		return text
	}
	for _, w := range words {
		if strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_") != "" {
			return text
		}
	}
	return strings.ToLower(strings.Join(words, "_")) + " " + id
}

func errObjectForm(text string) error {
	return quarantine.Errorf(quarantine.EINVALID,
		"%q is not an object the log can look up: type an id (83), or a type and an id (dead_letter 83, replay_request #4).", text)
}

// SplitObject reads an object typed as "type:id" or "type id" (the log's
// own way of showing it) into its type and id; ok is false when text has
// no such type in front.
func SplitObject(text string) (typ, id string, ok bool) {
	text = strings.TrimSpace(text)
	i := strings.IndexAny(text, ": \t")
	if i < 1 {
		return "", "", false
	}
	typ, id = text[:i], strings.TrimSpace(text[i+1:])
	if id == "" || !objectTypePattern.MatchString(typ) {
		return "", "", false
	}
	return typ, id, true
}
