package main

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
)

// TestRevOps13MalformedDatabaseURLHidesItsPassword: a generated password
// (base64: '/' and '+'; or with '#') pasted into DATABASE_URL without
// percent-encoding makes the URL unparseable, and the refusal quotes the
// setting's value. Redact recognises user information only up to the first
// '/', '#' or blank, so the whole password reaches stderr and the log
// collector that keeps it.
func TestRevOps13MalformedDatabaseURLHidesItsPassword(t *testing.T) {
	t.Parallel()
	for _, secret := range []string{"Zk8/q+Vw3sYt", "Zk8q#Vw3sYt", "Zk8q Vw3sYt"} {
		for _, tc := range []struct {
			args []string
			env  map[string]string
		}{
			{[]string{"console", "migrate"}, map[string]string{"MIGRATE_DATABASE_URL": "postgres://owner:" + secret + "@db:5432/x"}},
			{[]string{"console", "serve"}, map[string]string{"DATABASE_URL": "postgres://app:" + secret + "@db:5432/x",
				"OIDC_ISSUER": "http://127.0.0.1:1", "OIDC_CLIENT_ID": "c"}},
		} {
			var stderr bytes.Buffer
			err := run(context.Background(), tc.args, env(tc.env), io.Discard, &stderr)
			require.Error(t, err, tc.args)
			shown := app.Redact(err.Error()) // what main prints
			assert.NotContains(t, shown, secret, "%v: the password is printed: %s", tc.args, shown)
			assert.NotContains(t, app.Redact(stderr.String()), secret)
		}
	}
}
