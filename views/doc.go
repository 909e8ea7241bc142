// Package views holds the templ components of the console: layout, lists,
// detail, approval queue, policy table and audit pages. Components do no
// I/O: handlers in package web build typed view models and pass them in.
package views
