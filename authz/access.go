package authz

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/casbin/casbin/v2"
	"github.com/casbin/casbin/v2/model"
	"github.com/casbin/casbin/v2/persist"
	"github.com/casbin/casbin/v2/util"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

//go:embed model.conf
var modelText string

// anyTenant is a tenant no binding names, so only "*" bindings match it:
// Can(u, anyTenant, ...) asks "may u do this in every tenant?".
const anyTenant = "\x00every-tenant"

// User is a signed-in person as the identity provider described them: the
// Actor (issuer and subject identify them; the email is for people to read,
// and for email bindings only when verified) and the groups the provider
// put them in. Its JSON is the ID token's claims, as sessions store it.
type User struct {
	quarantine.Actor
	Groups []string `json:"groups"`
}

// Key identifies the person: user:<issuer>|<subject>.
func (u User) Key() string { return "user:" + u.Issuer + "|" + u.Subject }

// subjects are the Casbin subjects bindings may name for u: their identity,
// and their email's key (replaypolicy.EmailKey) when the provider verified
// it. An address without a key (not all ASCII) matches no email binding.
func (u User) subjects() []string {
	s := []string{u.Key()}
	if key, ok := u.emailKey(); ok {
		s = append(s, "email:"+key)
	}
	return s
}

// emailKey is the key of u's email as email bindings match it: only a
// verified one has one, and only when it is all ASCII.
func (u User) emailKey() (string, bool) {
	if !u.EmailVerified {
		return "", false
	}
	return replaypolicy.EmailKey(u.Email)
}

// Access answers authorization questions from the Casbin policy kept in
// PostgreSQL (casbin_rule for role permissions, role_bindings for who holds
// which role where) and from the roles the identity provider's groups give.
type Access struct {
	pool   *pgxpool.Pool
	groups GroupMap
	log    *slog.Logger
	enf    *casbin.SyncedEnforcer
	ad     *adapter
	// reload serialises reloads; loaded is the version (access_version)
	// of the policy in force, read in the snapshot it was loaded from.
	reload sync.Mutex
	loaded atomic.Int64
	// watching is true while Watch's listener is attached and the policy
	// it read after attaching is in force: a change from then on is heard.
	watching atomic.Bool
	// decided remembers the enforcer's answers under the policy in force
	// (decisions); a page asks the same questions many times (its
	// navigation, every tenant of a scope), and each answer of casbin's
	// evaluates the model's matcher anew: half of the dashboard's CPU.
	decided atomic.Pointer[decisions]
}

// decisions are the enforcer's answers since the last reload, at most
// maxDecisions of them (then they start again, empty).
type decisions struct {
	answers sync.Map // decisionKey → bool
	n       atomic.Int64
}

type decisionKey struct{ sub, tenant, obj, act string }

const maxDecisions = 100_000

// NewAccess loads the model and the policy. Call Watch to keep the policy
// current when another replica changes it.
func NewAccess(ctx context.Context, pool *pgxpool.Pool, groups GroupMap, log *slog.Logger) (*Access, error) {
	m, err := model.NewModelFromString(modelText)
	if err != nil {
		return nil, fmt.Errorf("casbin model: %w", err)
	}
	adLog := log
	if adLog == nil {
		adLog = slog.New(slog.DiscardHandler)
	}
	a := &Access{pool: pool, groups: groups, log: log, ad: &adapter{pool: pool, log: adLog}}
	logGroups(log, groups)
	enf, err := casbin.NewSyncedEnforcer(m, a.ad)
	if err != nil {
		return nil, fmt.Errorf("load authorization policy: %w", err)
	}
	// "*" is every tenant; the adapter keeps every other '*' out
	// (oneOrAll), which keyMatch would read as a prefix.
	enf.AddNamedDomainMatchingFunc("g", "keyMatch", util.KeyMatch)
	enf.EnableAutoSave(false)
	a.enf = enf
	if err := a.Reload(); err != nil {
		return nil, fmt.Errorf("load authorization policy: %w", err)
	}
	return a, nil
}

// logGroups logs the group mapping this process gives roles by: it is
// read from its settings only (AUTHZ_GROUP_PREFIX, AUTHZ_GROUP_ROLES), not
// shared through the database as bindings are, so a replica or worker
// started with another one grants by it until it is restarted; the log
// line, with the mapping's fingerprint, is where to check that they agree.
func logGroups(log *slog.Logger, groups GroupMap) {
	if log == nil {
		return
	}
	rules := []string{}
	for _, r := range groups.Rules() {
		rules = append(rules, r.Group+"="+r.Tenant+":"+r.Role)
	}
	log.Info("group-role mapping in force (AUTHZ_GROUP_PREFIX, AUTHZ_GROUP_ROLES): every replica and worker should log the same fingerprint",
		"prefix", groups.Prefix, "rules", rules, "fingerprint", groups.Fingerprint())
}

// Groups returns the group mapping in force.
func (a *Access) Groups() GroupMap { return a.groups }

// Reload reads the policy again, on a connection of the pool.
func (a *Access) Reload() error {
	return a.reloadOn(nil)
}

// reloadOn reads the policy again on conn, or on a connection of the pool
// when conn is nil. The listener (Watch) reloads on the connection it
// listens on: it holds that one for good, and a reload asking the pool
// for another while it does would wait for ever in a pool sized to the
// bone (pool_max_conns), the next notification unread meanwhile.
func (a *Access) reloadOn(conn *pgx.Conn) error {
	a.reload.Lock()
	defer a.reload.Unlock()
	a.ad.conn = conn
	defer func() { a.ad.conn = nil }()
	return a.reloadLocked()
}

func (a *Access) reloadLocked() error {
	if err := a.enf.LoadPolicy(); err != nil {
		return fmt.Errorf("reload authorization policy: %w", err)
	}
	// What was decided before goes, before the version says the new
	// policy is in force: a request that Fresh lets through on that
	// version finds no answer of the old one.
	a.decided.Store(nil)
	a.loaded.Store(a.ad.version)
	return nil
}

// atLeast makes sure the policy in force is of version v or newer,
// reloading it first when it is older.
func (a *Access) atLeast(v int64) error {
	if a.loaded.Load() >= v {
		return nil
	}
	a.reload.Lock()
	defer a.reload.Unlock()
	if a.loaded.Load() >= v { // another request reloaded meanwhile
		return nil
	}
	return a.reloadLocked()
}

// COALESCE: without its row (removed by hand), the version is 0, which
// every loaded policy satisfies, and only the listener reloads.
const selectAccessVersion = `SELECT COALESCE((SELECT version FROM access_version), 0)`

// Fresh makes sure the policy in force is at least as new as the one the
// database holds (access_version), reloading it first when it is not, so a
// binding removed on any replica gives nothing from the next request on,
// even before this replica's listener (Watch) hears of it. It takes the
// version the request's session read found (WithSessionReads: no round
// trip of its own), else reads it. The error is for failing to read.
func (a *Access) Fresh(ctx context.Context) error {
	v, ok := accessVersionRead(ctx)
	if !ok {
		if err := a.pool.QueryRow(ctx, selectAccessVersion).Scan(&v); err != nil {
			return fmt.Errorf("read authorization policy version: %w", err)
		}
	}
	return a.atLeast(v)
}

// Watch reloads the policy whenever a replica changes it (LISTEN on the
// channel the tables' triggers notify), and after every reconnection, until
// ctx ends.
func (a *Access) Watch(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := a.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		a.log.Warn("authorization policy listener lost; reconnecting", "err", err, "retry_in", backoff)
		select {
		case <-time.After(backoff + rand.N(backoff/2)):
		case <-ctx.Done():
			return
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

func (a *Access) listen(ctx context.Context) error {
	conn, err := a.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN quarantine_access_changed"); err != nil {
		return err
	}
	defer conn.Exec(context.Background(), "UNLISTEN *") //nolint:errcheck // the connection goes back to the pool either way
	if err := a.reloadOn(conn.Conn()); err != nil {     // changes made while we were not listening
		return err
	}
	a.watching.Store(true)
	defer a.watching.Store(false)
	for {
		// A notification that arrives while a reload reads is kept by the
		// connection and returned by the next wait.
		if _, err := conn.Conn().WaitForNotification(ctx); err != nil {
			return err
		}
		if err := a.reloadOn(conn.Conn()); err != nil {
			a.log.Warn("reload authorization policy", "err", err)
		} else {
			a.log.Debug("authorization policy reloaded")
		}
	}
}

// Can reports whether u may do act on obj in tenant. Never in tenant "":
// nothing lives there (ingest files a dead letter without a tenant under
// "unknown"), and casbin's keyMatch would take "" for a "*" binding, so a
// form naming no tenant would pass for anyone who holds a role in every
// tenant (TestRevWeb17EmptyTenantIsNoTenant). Scope asks about every
// tenant with anyTenant.
func (a *Access) Can(u User, tenant, obj, act string) bool {
	if tenant == "" {
		return false
	}
	for _, s := range u.subjects() {
		if a.enforce(s, tenant, obj, act) {
			return true
		}
	}
	for _, r := range a.groups.RolesFor(u.Groups) {
		if (r.Tenant == AllTenants || r.Tenant == tenant) && a.enforce(r.Role, tenant, obj, act) {
			return true
		}
	}
	return false
}

// enforce asks the enforcer, or remembers its answer under the policy in
// force. Every reload drops what was remembered once the new policy is in
// the enforcer and before it records the new version (reloadLocked), so
// the answers a request can find were all asked after its policy came in
// (an answer asked before lands in the dropped set): a binding removed
// gives nothing from the reload on (Fresh), as without remembering.
func (a *Access) enforce(sub, tenant, obj, act string) bool {
	d := a.decided.Load()
	if d == nil || d.n.Load() >= maxDecisions {
		fresh := &decisions{}
		if a.decided.CompareAndSwap(d, fresh) {
			d = fresh
		} else {
			d = a.decided.Load() // another request's, or nil after a reload: ask, keep nothing
		}
	}
	key := decisionKey{sub, tenant, obj, act}
	if d != nil {
		if ok, found := d.answers.Load(key); found {
			return ok.(bool)
		}
	}
	ok, err := a.enf.Enforce(sub, tenant, obj, act)
	if err != nil {
		a.log.Error("authorization check failed; denying", "sub", sub, "tenant", tenant, "obj", obj, "act", act, "err", err)
		return false
	}
	if d != nil {
		if _, had := d.answers.LoadOrStore(key, ok); !had {
			d.n.Add(1)
		}
	}
	return ok
}

// Scope is the set of tenants where a user may do something.
type Scope struct {
	All     bool     // every tenant, including ones that do not exist yet
	Tenants []string // when not All: these, sorted
}

// Empty reports whether the scope holds no tenant.
func (s Scope) Empty() bool { return !s.All && len(s.Tenants) == 0 }

// Has reports whether tenant is in the scope.
func (s Scope) Has(tenant string) bool {
	if s.All {
		return true
	}
	for _, t := range s.Tenants {
		if t == tenant {
			return true
		}
	}
	return false
}

// Within returns the tenants of s that are also in o.
func (s Scope) Within(o Scope) Scope {
	switch {
	case o.All:
		return s
	case s.All:
		return Scope{Tenants: append([]string{}, o.Tenants...)}
	}
	var out []string
	for _, t := range s.Tenants {
		if o.Has(t) {
			out = append(out, t)
		}
	}
	return Scope{Tenants: out}
}

// List returns the tenants for a query filter: nil for all.
func (s Scope) List() []string {
	if s.All {
		return nil
	}
	return append([]string{}, s.Tenants...)
}

// Scope returns where u may do act on obj. known are the tenants that
// exist; tenants u holds roles in are added to them.
func (a *Access) Scope(u User, obj, act string, known []string) Scope {
	if a.Can(u, anyTenant, obj, act) {
		return Scope{All: true}
	}
	set := map[string]bool{}
	for _, t := range known {
		set[t] = true
	}
	for _, r := range a.Roles(u) {
		if r.Tenant != AllTenants {
			set[r.Tenant] = true
		}
	}
	var out []string
	for t := range set {
		if a.Can(u, t, obj, act) {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return Scope{Tenants: out}
}

// CanSomewhere reports whether u may do act on obj in at least one tenant
// (known, or one u holds a role in).
func (a *Access) CanSomewhere(u User, obj, act string, known []string) bool {
	return !a.Scope(u, obj, act, known).Empty()
}

// Roles returns every role u holds: from bindings and from groups.
func (a *Access) Roles(u User) []TenantRole {
	set := map[TenantRole]bool{}
	for _, r := range a.groups.RolesFor(u.Groups) {
		set[r] = true
	}
	for _, s := range u.subjects() {
		rules, err := a.enf.GetFilteredGroupingPolicy(0, s)
		if err != nil {
			a.log.Warn("read role bindings", "err", err)
			continue
		}
		for _, g := range rules {
			if len(g) >= 3 {
				set[TenantRole{Tenant: g[2], Role: g[1]}] = true
			}
		}
	}
	return sortRoles(set)
}

// adapter gives Casbin its policy from PostgreSQL: p lines from
// casbin_rule, g lines from role_bindings. Changes go through the bindings
// store (audited), never through Casbin's save path.
type adapter struct {
	pool *pgxpool.Pool
	log  *slog.Logger // where a binding refused at load is reported
	// conn, when not nil, is the connection the next load reads on instead
	// of one of pool's (Access.reloadOn sets it, under Access.reload).
	conn *pgx.Conn
	// version is the access_version of the policy LoadPolicy read last, in
	// the same snapshot (Access.reload serialises loads).
	version int64
}

// txStarter is a pool or one connection: what a load reads on.
type txStarter interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

var errReadOnly = errors.New("authorization policy is changed through role bindings, not the enforcer")

const (
	selectPolicy = `SELECT ptype, v0, v1, v2, v3, v4, v5 FROM casbin_rule ORDER BY id`
	// unmatched_since: a binding the console stopped matching (migration
	// 0050) gives nobody anything, whatever its subject reads.
	selectBindings = `SELECT id, subject, role, tenant FROM role_bindings WHERE unmatched_since IS NULL ORDER BY id`
)

// LoadPolicy reads the version, the policy lines and the bindings in one
// snapshot, so the version it records is the one of what it read.
func (ad *adapter) LoadPolicy(m model.Model) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var db txStarter = ad.pool
	if ad.conn != nil {
		db = ad.conn
	}
	return pgx.BeginTxFunc(ctx, db, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		return ad.load(ctx, tx, m)
	})
}

func (ad *adapter) load(ctx context.Context, tx pgx.Tx, m model.Model) error {
	var version int64
	if err := tx.QueryRow(ctx, selectAccessVersion).Scan(&version); err != nil {
		return fmt.Errorf("read access_version: %w", err)
	}
	rows, err := tx.Query(ctx, selectPolicy)
	if err != nil {
		return fmt.Errorf("read casbin_rule: %w", err)
	}
	var line [7]string
	_, err = pgx.ForEachRow(rows, []any{&line[0], &line[1], &line[2], &line[3], &line[4], &line[5], &line[6]}, func() error {
		// Casbin keeps the slice: copy it out of the scan buffer.
		rule := append([]string(nil), trimEmpty(line[:])...)
		return persist.LoadPolicyArray(rule, m)
	})
	if err != nil {
		return fmt.Errorf("read casbin_rule: %w", err)
	}
	rows, err = tx.Query(ctx, selectBindings)
	if err != nil {
		return fmt.Errorf("read role_bindings: %w", err)
	}
	var id int64
	var sub, role, tenant string
	_, err = pgx.ForEachRow(rows, []any{&id, &sub, &role, &tenant}, func() error {
		if !oneOrAll(tenant) {
			// Only the form keeps such a tenant out of the table. The row
			// is skipped rather than failing the load: the binding grants
			// nothing, as its author cannot have meant a prefix, and every
			// other binding stays in force. A failed load would keep the
			// console from starting, locking out the admins who can
			// delete the row, or, at a reload, keep the policy of before
			// in force, bindings removed since included.
			ad.log.Error("role binding refused: its tenant holds a '*' but is not \"*\" (every tenant), which would grant in every tenant it prefixes; delete it and bind the tenants meant",
				"binding", id, "subject", sub, "role", role, "tenant", tenant)
			return nil
		}
		return persist.LoadPolicyArray([]string{"g", sub, role, tenant}, m)
	})
	if err != nil {
		return fmt.Errorf("read role_bindings: %w", err)
	}
	ad.version = version
	return nil
}

func trimEmpty(line []string) []string {
	n := len(line)
	for n > 0 && line[n-1] == "" {
		n--
	}
	return line[:n]
}

func (ad *adapter) SavePolicy(model.Model) error                              { return errReadOnly }
func (ad *adapter) AddPolicy(string, string, []string) error                  { return errReadOnly }
func (ad *adapter) RemovePolicy(string, string, []string) error               { return errReadOnly }
func (ad *adapter) RemoveFilteredPolicy(string, string, int, ...string) error { return errReadOnly }
