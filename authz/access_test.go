package authz

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

func newAccess(t *testing.T, db *testdb.DB, groups GroupMap) *Access {
	t.Helper()
	a, err := NewAccess(context.Background(), db.Pool, groups, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	return a
}

func TestCanByGroupRoles(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	extra, err := ParseGroupMap("platform-oncall=acme:oncall,globex:oncall; sec=*:auditor")
	require.NoError(t, err)
	extra.Prefix = "quarantine:"
	a := newAccess(t, db, extra)

	oncall := User{Actor: quarantine.Actor{Issuer: "i", Subject: "1"}, Groups: []string{"quarantine:acme:oncall"}}
	approver := User{Actor: quarantine.Actor{Issuer: "i", Subject: "2"}, Groups: []string{"quarantine:acme:approver", "quarantine:globex:approver"}}
	auditor := User{Actor: quarantine.Actor{Issuer: "i", Subject: "3"}, Groups: []string{"quarantine:*:auditor"}}
	platform := User{Actor: quarantine.Actor{Issuer: "i", Subject: "4"}, Groups: []string{"platform-oncall"}}
	sec := User{Actor: quarantine.Actor{Issuer: "i", Subject: "5"}, Groups: []string{"sec"}}
	nobody := User{Actor: quarantine.Actor{Issuer: "i", Subject: "6"}, Groups: []string{"quarantine:acme:superhero", "engineering", "acme:oncall"}}

	cases := []struct {
		u                User
		tenant, obj, act string
		want             bool
	}{
		{oncall, "acme", ObjDeadLetter, ActRead, true},
		{oncall, "globex", ObjDeadLetter, ActRead, false},
		{oncall, "acme", ReplayObject("rebuildable"), ActRequest, true},
		{oncall, "acme", ReplayObject("manual"), ActApprove, false},
		{oncall, "acme", ObjAudit, ActRead, false},
		{approver, "globex", ReplayObject("manual"), ActApprove, true},
		{approver, "acme", ReplayObject("manual"), ActRequest, false},
		{approver, "acme", ObjDeadLetter, ActDiscard, false},
		{auditor, "acme", ObjAudit, ActExport, true},
		{auditor, "any-new-tenant", ObjAudit, ActRead, true},
		{auditor, "acme", ObjDeadLetter, ActRead, true},
		{auditor, "acme", ObjDeadLetter, ActDiscard, false},
		{auditor, "acme", ReplayObject("rebuildable"), ActRequest, false},
		{platform, "globex", ObjDeadLetter, ActDiscard, true},
		{sec, "globex", ObjAudit, ActRead, true},
		{nobody, "acme", ObjDeadLetter, ActRead, false},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, a.Can(tc.u, tc.tenant, tc.obj, tc.act), "%v %s %s:%s", tc.u.Groups, tc.tenant, tc.obj, tc.act)
	}

	assert.Equal(t, Scope{Tenants: []string{"acme"}}, a.Scope(oncall, ObjDeadLetter, ActRead, []string{"acme", "globex"}))
	assert.True(t, a.Scope(auditor, ObjAudit, ActRead, nil).All)
	assert.True(t, a.Scope(nobody, ObjDeadLetter, ActRead, []string{"acme"}).Empty())
	assert.Equal(t, []TenantRole{{"acme", "oncall"}, {"globex", "oncall"}}, a.Roles(platform))
	assert.Empty(t, a.Roles(nobody))
}

func TestBindingsGrantAndReloadInEveryReplica(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	replicaA := newAccess(t, db, GroupMap{})
	replicaB := newAccess(t, db, GroupMap{})
	go replicaB.Watch(ctx)

	admin := User{Actor: quarantine.Actor{Issuer: "i", Subject: "admin", Email: "admin@example.com"}}
	bob := User{Actor: quarantine.Actor{Issuer: "i", Subject: "bob", Email: "Bob@Example.com", EmailVerified: true}}
	require.False(t, replicaB.Can(bob, "acme", ObjDeadLetter, ActRead))

	// Replica B's listener must be attached before the change, or it would
	// only see it on its reconnect reload; wait for LISTEN to be in place
	// and the policy read after it in force (the listener reloads on its
	// own connection, so pg_stat_activity shows the reload's last
	// statement there, not the LISTEN).
	wait.Until(t, "replica B listening", 30*time.Second, func() bool { return replicaB.watching.Load() })

	bindings := NewBindings(db.Pool)
	added, err := bindings.Add(ctx, BindingInput{Email: "bob@example.com", Role: RoleOncall, Tenant: "acme"}, admin, audit.Event{})
	require.NoError(t, err)
	wait.Until(t, "replica B to see the binding", 30*time.Second, func() bool { return replicaB.Can(bob, "acme", ObjDeadLetter, ActRead) })
	assert.False(t, replicaB.Can(bob, "globex", ObjDeadLetter, ActRead))
	assert.False(t, replicaA.Can(bob, "acme", ObjDeadLetter, ActRead), "replica A has not reloaded yet: it does not watch")
	require.NoError(t, replicaA.Reload())
	assert.True(t, replicaA.Can(bob, "acme", ObjDeadLetter, ActRead))

	unverified := bob
	unverified.EmailVerified = false
	assert.False(t, replicaB.Can(unverified, "acme", ObjDeadLetter, ActRead), "email bindings need a verified email")

	_, err = bindings.Add(ctx, BindingInput{Email: "bob@example.com", Role: RoleOncall, Tenant: "acme"}, admin, audit.Event{})
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "%v", err)
	_, err = bindings.Add(ctx, BindingInput{Email: "not an email", Role: "king", Tenant: ""}, admin, audit.Event{})
	assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "%v", err)

	err = bindings.Delete(ctx, added.ID, admin, func(Binding) bool { return false }, audit.Event{})
	assert.Equal(t, quarantine.ENOTFOUND, quarantine.ErrorCode(err), "a binding the admin may not manage is not found")
	require.NoError(t, bindings.Delete(ctx, added.ID, admin, func(Binding) bool { return true }, audit.Event{}))
	wait.Until(t, "replica B to drop the binding", 30*time.Second, func() bool { return !replicaB.Can(bob, "acme", ObjDeadLetter, ActRead) })

	var actions []string
	rows, err := db.Pool.Query(ctx, "SELECT action FROM audit_log WHERE object_type = 'role_binding' ORDER BY seq")
	require.NoError(t, err)
	for rows.Next() {
		var a string
		require.NoError(t, rows.Scan(&a))
		actions = append(actions, a)
	}
	assert.Equal(t, []string{"binding.add", "binding.delete"}, actions, "changes are audited; refused ones change nothing")
}

func TestBindingInputValidate(t *testing.T) {
	t.Parallel()
	ok := BindingInput{Email: "a@example.com", Role: RoleAdmin, Tenant: "*"}
	assert.Nil(t, ok.Validate())
	for name, in := range map[string]BindingInput{
		"NoOne":        {Role: RoleAdmin, Tenant: "acme"},
		"Both":         {Email: "a@example.com", Subject: "i|s", Role: RoleAdmin, Tenant: "acme"},
		"BadEmail":     {Email: "a@", Role: RoleAdmin, Tenant: "acme"},
		"BadSubject":   {Subject: "justsub", Role: RoleAdmin, Tenant: "acme"},
		"BadRole":      {Email: "a@example.com", Role: "root", Tenant: "acme"},
		"BadTenant":    {Email: "a@example.com", Role: RoleAdmin, Tenant: "ac.me"},
		"PartWildcard": {Email: "a@example.com", Role: RoleAdmin, Tenant: "ac*"},
	} {
		assert.NotNil(t, in.Validate(), name)
	}
}
