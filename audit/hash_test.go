package audit

import (
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
)

func sampleEntry() Entry {
	return Entry{
		Seq:         17,
		At:          time.Date(2025, 3, 4, 5, 6, 7, 123456000, time.UTC),
		Actor:       quarantine.Actor{Issuer: "https://idp.example", Subject: "sub-1", Email: "ann@example.com", EmailVerified: true},
		Tenant:      "acme",
		Action:      "replay.approve",
		ObjectType:  "replay_request",
		ObjectID:    "42",
		MessageID:   "msg-1",
		OperationID: "op-1",
		RequestID:   "req-1",
		Reason:      "fixed upstream",
		Outcome:     OutcomeOK,
		Before:      json.RawMessage(`{"status":"pending"}`),
		After:       json.RawMessage(`{"status":"approved"}`),
		RemoteAddr:  "192.0.2.1",
		UserAgent:   "curl/8",
		PrevHash:    make([]byte, 32),
		HashVersion: 2,
	}
}

// The encoding is the contract between every entry ever written and every
// future Verify; this pins it. Changing it needs a new domain tag.
func TestHashEntryKnownAnswer(t *testing.T) {
	t.Parallel()
	// Computed independently (Python, from the description on hashEntry).
	e := sampleEntry()
	require.Equal(t, "732f8c368f33b46e52c30097c7946235e32401ef16a4cc408691a4b72301b32c", hex.EncodeToString(hashEntry(&e)))
	e.Actor.EmailVerified = false
	require.Equal(t, "1a6363396e3cfcc047d9db4ebbe400cf0727478c93287a7a3bf7deefda0a5cac", hex.EncodeToString(hashEntry(&e)))
	// Entries written before the email's verification was recorded keep
	// their encoding, so they verify as they always did.
	e.HashVersion = 1
	require.Equal(t, "5418ec15486b09c93117ca947834d5c02cd2f47afec5cae41d061bc8ee750c78", hex.EncodeToString(hashEntry(&e)))
}

func TestHashEntryCoversEveryField(t *testing.T) {
	t.Parallel()
	base := sampleEntry()
	baseHash := hashEntry(&base)

	same := sampleEntry()
	require.Equal(t, baseHash, hashEntry(&same), "same entry, same hash")
	same.At = base.At.In(time.FixedZone("x", 3600))
	require.Equal(t, baseHash, hashEntry(&same), "the same instant in another zone is the same entry")
	same.Hash = []byte("ignored")
	require.Equal(t, baseHash, hashEntry(&same), "the stored hash is not part of what it covers")

	tests := []struct {
		name   string
		change func(e *Entry)
	}{
		{"Seq", func(e *Entry) { e.Seq++ }},
		{"AtMicrosecond", func(e *Entry) { e.At = e.At.Add(time.Microsecond) }},
		{"ActorIssuer", func(e *Entry) { e.Actor.Issuer += "x" }},
		{"ActorSubject", func(e *Entry) { e.Actor.Subject += "x" }},
		{"ActorEmail", func(e *Entry) { e.Actor.Email += "x" }},
		{"ActorEmailVerified", func(e *Entry) { e.Actor.EmailVerified = false }},
		{"HashVersion", func(e *Entry) { e.HashVersion = 1 }},
		{"Tenant", func(e *Entry) { e.Tenant += "x" }},
		{"Action", func(e *Entry) { e.Action += "x" }},
		{"ObjectType", func(e *Entry) { e.ObjectType += "x" }},
		{"ObjectID", func(e *Entry) { e.ObjectID += "x" }},
		{"MessageID", func(e *Entry) { e.MessageID += "x" }},
		{"OperationID", func(e *Entry) { e.OperationID += "x" }},
		{"RequestID", func(e *Entry) { e.RequestID += "x" }},
		{"Reason", func(e *Entry) { e.Reason += "x" }},
		{"Outcome", func(e *Entry) { e.Outcome = OutcomeDenied }},
		{"Before", func(e *Entry) { e.Before = json.RawMessage(`{"status":"pendinG"}`) }},
		{"BeforeNull", func(e *Entry) { e.Before = nil }},
		{"BeforeJSONNullIsNotSQLNull", func(e *Entry) { e.Before = json.RawMessage(`null`) }},
		{"After", func(e *Entry) { e.After = json.RawMessage(`{"status":"rejected"}`) }},
		{"AfterNull", func(e *Entry) { e.After = nil }},
		{"BeforeAfterSwapped", func(e *Entry) { e.Before, e.After = e.After, e.Before }},
		{"RemoteAddr", func(e *Entry) { e.RemoteAddr += "x" }},
		{"UserAgent", func(e *Entry) { e.UserAgent += "x" }},
		{"PrevHash", func(e *Entry) { e.PrevHash = append(make([]byte, 31), 1) }},
		{"PrevHashNull", func(e *Entry) { e.PrevHash = nil }},
		// Length prefixes: moving bytes across a field boundary is a change.
		{"ShiftIssuerIntoSubject", func(e *Entry) {
			e.Actor.Issuer, e.Actor.Subject = "https://idp.exampl", "esub-1"
		}},
		{"ShiftReasonIntoOutcome", func(e *Entry) { e.Reason, e.Outcome = "fixed upstreamo", "k" }},
		{"ShiftUserAgentIntoPrevHash", func(e *Entry) {
			e.UserAgent = "curl/8\x00"
			e.PrevHash = make([]byte, 31)
		}},
	}
	seen := map[string]string{hex.EncodeToString(baseHash): "base"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := sampleEntry()
			tt.change(&e)
			h := hex.EncodeToString(hashEntry(&e))
			require.NotEqual(t, hex.EncodeToString(baseHash), h)
			again := sampleEntry()
			tt.change(&again)
			require.Equal(t, h, hex.EncodeToString(hashEntry(&again)), "deterministic")
		})
		e := sampleEntry()
		tt.change(&e)
		h := hex.EncodeToString(hashEntry(&e))
		require.NotContains(t, seen, h, "%s collides with %s", tt.name, seen[h])
		seen[h] = tt.name
	}
}

func TestCanonicalJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   *string
		want json.RawMessage
	}{
		{"Null", nil, nil},
		{"JSONNull", ptr("null"), json.RawMessage("null")},
		{"SpacesBetweenTokens", ptr(`{"a": [1, 2], "b": {"c": "x y"}}`), json.RawMessage(`{"a":[1,2],"b":{"c":"x y"}}`)},
		{"HTMLKeptAsIs", ptr(`{"a": "<b>&</b>"}`), json.RawMessage(`{"a":"<b>&</b>"}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := canonicalJSON(tt.in)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestCleanText(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"Plain", "Mozilla/5.0 (X11)", "Mozilla/5.0 (X11)"},
		{"Unicode", "Zoë ✓", "Zoë ✓"},
		{"NUL", "a\x00b", "a\uFFFDb"},
		{"InvalidUTF8", "a\xffb", "a\uFFFDb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, cleanText(tt.in))
		})
	}
}

func ptr[T any](v T) *T { return &v }
