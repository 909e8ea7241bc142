package app

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFixOps13RedactTakesUserInformationToTheLastAt: a password pasted
// without percent-encoding ('/', '#', '?', '@' in it) is hidden whole; a
// NATS_URL list keeps each server; text around a URL stays.
func TestFixOps13RedactTakesUserInformationToTheLastAt(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"postgres://app:Zk8/q+Vw3sYt@db/x":                     "postgres://app:xxxxx@db/x",
		"postgres://app:Zk8q#Vw3sYt@db:5432/x?sslmode=require": "postgres://app:xxxxx@db:5432/x?sslmode=require",
		"postgres://app:a?b@c@db/x":                            "postgres://app:xxxxx@db/x",
		`DATABASE_URL "postgres://app:p/w@db/x": refused`:      `DATABASE_URL "postgres://app:xxxxx@db/x": refused`,
		"nats://tok/en@n1:4222,nats://b:p#w@n2:4222":           "nats://xxxxx@n1:4222,nats://b:xxxxx@n2:4222",
		"https://idp.example/users/ann@example.com signed in":  "https://idp.example/users/ann@example.com signed in",
		"see https://idp.example and mail ops@example.com":     "see https://idp.example and mail ops@example.com",
		"postgres://app@db/x":                                  "postgres://app@db/x",
	} {
		assert.Equal(t, want, Redact(in), in)
	}
}
