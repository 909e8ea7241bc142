// Package authz owns who may do what: OIDC login with PKCE, state and nonce
// (oidc.go), server-side sessions in PostgreSQL (session.go), and the Casbin
// authorization model with its policy storage (access.go). Tenants are
// Casbin domains; "*" means all tenants.
//
// It knows about dead letters only as object names ("deadletter",
// "replay:<class>", "audit", "bindings", "policy").
package authz
