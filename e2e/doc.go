// Package e2e holds the end-to-end tests: the real console binary against
// real PostgreSQL, NATS, the Dex identity provider and headless Chromium.
package e2e
