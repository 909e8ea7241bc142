// Package dlq owns dead letters: the header contract producers follow
// (contract.go), the producer helper that builds a dead letter in one call
// (producer.go), the pure parser that turns a received message into a Record
// (parse.go), error fingerprints (fingerprint.go), and ingest from NATS
// JetStream into PostgreSQL (ingest.go, advisory.go, store.go).
//
// It knows nothing about HTTP or HTML.
package dlq
