// Package web is the console's HTTP layer: echo routes and handlers,
// request parsing and validation, CSRF and security headers, and the static
// assets. Every route is listed once in routes.go with the permission it
// needs. Handlers call the domain packages; they hold no SQL.
package web
