// Package web is the console's HTTP layer: echo routes and handlers,
// request parsing and validation, CSRF and security headers, and the static
// assets. Every route is listed once (routes*.go) with the permission it
// needs and how it finds the tenant of what it touches (locate.go); the
// enforce middleware applies both before the handler, and one
// HTTPErrorHandler (error.go) answers every error by its code. Handlers
// parse typed forms, call the domain packages and render; they hold no
// SQL.
package web
