//go:build tools

// Package tools pins the NATS server that the end-to-end tests run as
// separate processes (single servers and a three-node cluster). It is a
// separate module so that building the server binary never touches the
// console's go.mod; the version matches the console's nats-server pin.
// The e2e harness builds it into .data/bin/nats-server.
package tools

import _ "github.com/nats-io/nats-server/v2"
