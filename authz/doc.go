// Package authz will own login (OIDC with PKCE, server-side sessions), the
// Casbin model and its policy storage, the Can(subject, tenant, object,
// action) check, and the echo middleware that enforces the route table.
package authz
