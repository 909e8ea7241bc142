package authz

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestBindingAuthor: a binding records who added it (issuer, subject, the
// email claim and whether it was verified) and names them as every page
// names a person; a binding from before migration 0046 keeps its email as
// it was.
func TestBindingAuthor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	bindings := NewBindings(db.Pool)
	add := func(email string, by quarantine.Actor) Binding {
		t.Helper()
		b, err := bindings.Add(ctx, BindingInput{Email: email, Role: RoleViewer, Tenant: "acme"}, User{Actor: by}, audit.Event{})
		require.NoError(t, err)
		return b
	}

	t.Run("Verified", func(t *testing.T) {
		b := add("a@example.com", quarantine.Actor{Issuer: "i", Subject: "admin", Email: "Admin@example.com", EmailVerified: true, Name: "Admin"})
		assert.Equal(t, "Admin@example.com", b.Author(), "the address, not the name its owner set")
		require.NotNil(t, b.AuthorIssuer)
		assert.Equal(t, "i", *b.AuthorIssuer)
		assert.Equal(t, "admin", *b.AuthorSubject)
	})
	t.Run("Unverified", func(t *testing.T) {
		b := add("b@example.com", quarantine.Actor{Issuer: "i", Subject: "claimant", Email: "dana@example.com"})
		assert.Equal(t, "dana@example.com (unverified)", b.Author())
	})
	t.Run("NoEmail", func(t *testing.T) {
		b := add("c@example.com", quarantine.Actor{Issuer: "i", Subject: "no-email", EmailVerified: true})
		assert.Equal(t, "no-email", b.Author(), "the subject; a verified flag without an address verifies nothing")
		require.NotNil(t, b.AuthorEmailVerified)
		assert.False(t, *b.AuthorEmailVerified)
	})
	t.Run("BeforeMigration0046", func(t *testing.T) {
		_, err := db.Pool.Exec(ctx, `INSERT INTO role_bindings (subject, role, tenant, created_by) VALUES ('email:old@example.com', 'viewer', 'acme', 'old-admin@example.com')`)
		require.NoError(t, err)
		all, err := bindings.List(ctx)
		require.NoError(t, err)
		for _, b := range all {
			if b.Subject == "email:old@example.com" {
				assert.Equal(t, "old-admin@example.com", b.Author(), "as it was shown")
				return
			}
		}
		t.Fatal("the old binding is not listed")
	})
	t.Run("PartialAuthorRefused", func(t *testing.T) {
		_, err := db.Pool.Exec(ctx, `INSERT INTO role_bindings (subject, role, tenant, created_by, created_by_issuer) VALUES ('email:p@example.com', 'viewer', 'acme', '', 'i')`)
		assert.ErrorContains(t, err, "role_bindings_author_check")
	})
}
