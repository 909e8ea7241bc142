package authz

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// lockedBuffer is a log's destination that a test reads while the
// listener's reloads may write.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRev36BindingTenantWithAWildcardGrantsNothing: bindings match their
// tenant with keyMatch, so that "*" covers every tenant; a '*' anywhere
// else is a pattern too, and only the form refused one. A row "acme*"
// written another way (by hand, a restore, a later tool) gave its role in
// acme and in every tenant starting with acme. Such a row grants nothing
// and is logged; every other binding, "*" among them, is in force.
func TestRev36BindingTenantWithAWildcardGrantsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	_, err := db.Pool.Exec(ctx, `INSERT INTO role_bindings (subject, role, tenant, created_by) VALUES
        ('user:i|1', 'admin', 'acme*', 'by hand'),
        ('user:i|1', 'viewer', 'globex', 'by hand'),
        ('user:i|1', 'oncall', 'in*itech', 'by hand'),
        ('user:i|2', 'auditor', '*', 'by hand')`)
	require.NoError(t, err)
	var logs lockedBuffer
	a, err := NewAccess(ctx, db.Pool, GroupMap{}, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err, "one such row does not keep the console from starting")

	one := User{Actor: quarantine.Actor{Issuer: "i", Subject: "1"}}
	for _, tenant := range []string{"acme", "acme-prod", "acmecorp", "acme*", "in*itech", "initech", "in-x"} {
		assert.False(t, a.Can(one, tenant, ObjBindings, ActManage), "admin in %s", tenant)
		assert.False(t, a.Can(one, tenant, ObjDeadLetter, ActDiscard), "oncall in %s", tenant)
	}
	assert.True(t, a.Can(one, "globex", ObjDeadLetter, ActRead), "the person's other binding is in force")
	assert.Equal(t, []TenantRole{{Tenant: "globex", Role: "viewer"}}, a.Roles(one))
	two := User{Actor: quarantine.Actor{Issuer: "i", Subject: "2"}}
	assert.True(t, a.Can(two, "acme-prod", ObjAudit, ActRead), "* still means every tenant")
	assert.Contains(t, logs.String(), `tenant=acme*`, "the row is named in the log")
	assert.Contains(t, logs.String(), `tenant=in*itech`)

	// A reload refuses it too.
	require.NoError(t, a.Reload())
	assert.False(t, a.Can(one, "acme-prod", ObjBindings, ActManage))
}
