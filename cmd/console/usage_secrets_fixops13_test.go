package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/app"
)

// TestFixOps13NoCommandPrintsASecretInItsUsage: every command that takes
// settings, asked for its help or given a flag it does not know, prints
// no secret setting's value (it says the setting is set) and no URL
// credentials of any other setting's default.
func TestFixOps13NoCommandPrintsASecretInItsUsage(t *testing.T) {
	t.Parallel()
	const pw = "Zk8/q+Vw3sYt"
	e := env(map[string]string{
		"DATABASE_URL": "postgres://app:" + pw + "@db:5432/q", "MIGRATE_DATABASE_URL": "postgres://owner:" + pw + "@db/q",
		"NATS_URL": "nats://" + pw + "@n1:4222", "OIDC_CLIENT_SECRET": pw, "OIDC_ISSUER": "https://idp:" + pw + "@idp.example",
	})
	for _, cmd := range commandsWithSettings {
		for _, flagArg := range []string{"-h", "--no-such-flag"} {
			args := append(append([]string{"console"}, cmd...), flagArg)
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), args, e, &stdout, &stderr)
			out := stdout.String() + stderr.String()
			if err != nil {
				out += app.Redact(err.Error())
			}
			assert.NotContains(t, out, pw, "%v", args)
			if strings.Contains(out, "(DATABASE_URL") {
				assert.Contains(t, out, "(DATABASE_URL; set, not shown)", "%v", args)
			}
		}
	}
}
