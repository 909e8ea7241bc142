// Package e2e holds the end-to-end tests: the real console binary against
// real PostgreSQL, NATS servers running as their own processes, the Dex
// identity provider and headless Chromium. Nothing is mocked: people sign
// in through Dex's login page, in the browser or over HTTP.
//
// Run them with `make e2e` (only these) or `make test` (everything): the
// scripts find or start PostgreSQL, build Dex (tools/dex) and nats-server
// (tools/nats, the console's pinned version) into .data/bin, and install
// Debian's chromium when it is missing. `go test ./e2e` alone works too
// when DATABASE_URL is set; it builds what is missing itself.
//
// The harness (files without "journey" or "fault" in their names):
//
//   - process: every server is a child process in its own process group,
//     stopped at cleanup whatever happens (and killed by the kernel if the
//     test binary dies); Stop (graceful), Kill (SIGKILL) and Start again
//     on the same ports and data.
//   - stack: newStack starts a test's database (a fresh copy of the
//     migrated template, or a private PostgreSQL cluster), a nats-server
//     (or a given cluster), Dex and one or more console replicas.
//   - nats: single servers and three-node JetStream clusters on loopback.
//   - postgres: a private cluster (initdb in a temporary directory, its own
//     port) for tests that restart PostgreSQL.
//   - browser: one Chromium per test, one browser context (own cookies) per
//     person, LoginAs through Dex's form, steps that wait on conditions,
//     fetch() with the browser's session.
//   - httpclient: signed-in HTTP clients without a browser.
//   - deadletters: a producer publishing dead letters with the dlq helper,
//     retrying through faults, and the exactly-once checks.
//   - replay_helpers: steps for the replay journeys, waiting for the
//     product screens they drive.
//
// Artifacts go to .data/e2e-artifacts/ (ignored by git): a PNG of each journey's
// final page as <test>.png, and when a test fails, the HTML and a
// screenshot of each person's page and the output of every process it
// started (console, Dex, NATS, PostgreSQL, Chromium).
package e2e
