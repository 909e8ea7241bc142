package authz

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Holder is someone who holds a role in a tenant ("*": every tenant), and
// where the role comes from: a binding, or an identity-provider group as
// the provider last described the person.
type Holder struct {
	Tenant string
	Role   string
	// Person is an email (verified by the provider, or named by an email
	// binding) or issuer|subject.
	Person string
	// Group is the group that gives the role ("" for a binding); Seen is
	// when the provider last said the person was in it.
	Group string
	Seen  time.Time
	// BindingID is the binding that gives the role (0 for a group).
	BindingID int64
}

// Each person's identity and groups as the directory has them: from their
// last sign-in or refresh, not revoked since (an admin's Sign out
// everywhere, a refused refresh: the entry's groups are cleared then, but
// the mark is what says so), and seen within $1 (older groups give no
// right to anyone: Authority).
const selectHolderEntries = `SELECT issuer, subject, email, email_verified, groups, seen_at
    FROM user_directory
    WHERE revoked_at IS NULL AND seen_at > now() - $1::interval AND groups <> '{}'`

// Holders lists who holds which role, from both places a role comes from:
// every binding, and every person whose groups, as the provider described
// them at their last sign-in or refresh (the directory), map to a role
// (groups under the configured prefix, or named in the mapping). People who
// never signed in, whose entry is revoked (until they sign in again), or
// who were last seen more than maxAge ago (the session lifetime; 0:
// DefaultDirectoryMaxAge) are not listed as holding group roles: none of
// those gives them a right. Sorted by tenant, role, person.
func (a *Access) Holders(ctx context.Context, db *pgxpool.Pool, bindings []Binding, maxAge time.Duration) ([]Holder, error) {
	if maxAge <= 0 {
		maxAge = DefaultDirectoryMaxAge
	}
	var out []Holder
	for _, b := range bindings {
		if b.UnmatchedSince != nil { // gives nobody anything (migration 0050)
			continue
		}
		out = append(out, Holder{Tenant: b.Tenant, Role: b.Role, Person: bindingPerson(b.Subject), BindingID: b.ID})
	}
	rows, err := db.Query(ctx, selectHolderEntries, maxAge.String())
	if err != nil {
		return nil, fmt.Errorf("read role holders: %w", err)
	}
	var u User
	var seen time.Time
	_, err = pgx.ForEachRow(rows, []any{&u.Issuer, &u.Subject, &u.Email, &u.EmailVerified, &u.Groups, &seen}, func() error {
		for _, g := range u.Groups {
			for _, r := range a.groups.RolesFor([]string{g}) {
				out = append(out, Holder{Tenant: r.Tenant, Role: r.Role, Person: personOf(u), Group: g, Seen: seen})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read role holders: %w", err)
	}
	sort.SliceStable(out, func(i, j int) bool {
		x, y := out[i], out[j]
		if x.Tenant != y.Tenant {
			return x.Tenant < y.Tenant
		}
		if x.Role != y.Role {
			return roleOrder(x.Role) < roleOrder(y.Role)
		}
		return x.Person < y.Person
	})
	return out, nil
}

// personOf is how a person is named: their email's key when the provider
// verified it (as an email binding names it, so a binding and a group of
// one person read alike), else issuer|subject: an address without a key
// matches no binding, and lower-cased it could read as another's.
func personOf(u User) string {
	if key, ok := u.emailKey(); ok {
		return key
	}
	return u.Issuer + "|" + u.Subject
}

// bindingPerson is the person a binding's subject names.
func bindingPerson(subject string) string {
	if email, ok := strings.CutPrefix(subject, "email:"); ok {
		return email
	}
	return strings.TrimPrefix(subject, "user:")
}

// roleOrder is a role's place in Roles.
func roleOrder(role string) int {
	for i, r := range Roles {
		if r == role {
			return i
		}
	}
	return len(Roles)
}
