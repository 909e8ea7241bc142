package authz

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFixGov11GroupMapFingerprintNamesTheMapping: the fingerprint a
// process logs at start is the mapping's, not its spelling: the same rules
// in another order print the same one; a rule removed (a role taken from a
// group), a role changed or another prefix print another.
func TestFixGov11GroupMapFingerprintNamesTheMapping(t *testing.T) {
	t.Parallel()
	parse := func(prefix, roles string) GroupMap {
		m, err := ParseGroupMap(roles)
		require.NoError(t, err)
		m.Prefix = prefix
		return m
	}
	base := parse("quarantine:", "platform-oncall=acme:oncall,globex:oncall;security=*:auditor")
	fp := base.Fingerprint()
	assert.Len(t, fp, 64)
	assert.Equal(t, fp, parse("quarantine:", " security=*:auditor ; platform-oncall=globex:oncall,acme:oncall").Fingerprint(), "same mapping, other order")
	for name, m := range map[string]GroupMap{
		"a rule removed":  parse("quarantine:", "platform-oncall=acme:oncall;security=*:auditor"),
		"a role changed":  parse("quarantine:", "platform-oncall=acme:oncall,globex:approver;security=*:auditor"),
		"another prefix":  parse("corp:", "platform-oncall=acme:oncall,globex:oncall;security=*:auditor"),
		"no prefix":       parse("", "platform-oncall=acme:oncall,globex:oncall;security=*:auditor"),
		"no extra groups": parse("quarantine:", ""),
	} {
		assert.NotEqual(t, fp, m.Fingerprint(), name)
	}
}

// TestFixGov11StartLogsTheGroupMapping: NewAccess logs the mapping it
// grants by, with its fingerprint, so replicas rolled with different
// settings can be told apart from their logs.
func TestFixGov11StartLogsTheGroupMapping(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	m, err := ParseGroupMap("security=*:auditor")
	require.NoError(t, err)
	m.Prefix = "quarantine:"
	logGroups(slog.New(slog.NewTextHandler(&buf, nil)), m)
	out := buf.String()
	assert.Contains(t, out, "group-role mapping in force")
	assert.Contains(t, out, "prefix=quarantine:")
	assert.Contains(t, out, "security=*:auditor")
	assert.Contains(t, out, "fingerprint="+m.Fingerprint())
	logGroups(nil, m) // no logger: nothing, no panic
}
