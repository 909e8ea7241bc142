package replaypolicy

import (
	"strings"
	"testing"
)

// TestEmailKey: a match that grants reads ASCII case as one mailbox and
// nothing else; an address that is not all ASCII has no key, so it matches
// no binding and no filter (Unicode case mapping turns kİwİ.example into
// kiwi.example, another domain).
func TestEmailKey(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		email, key string
		ok         bool
	}{
		{"ops@kiwi.example", "ops@kiwi.example", true},
		{"Ops@KIWI.Example", "ops@kiwi.example", true},
		{"ops+tag@kiwi.example", "ops+tag@kiwi.example", true}, // a tag is part of the mailbox here
		{`"ops"@kiwi.example`, `"ops"@kiwi.example`, true},
		{"ops@kiwi.example.", "ops@kiwi.example.", true},
		{"ops@xn--kiwi-rwcc.example", "ops@xn--kiwi-rwcc.example", true},
		{"ops@k\u0130w\u0130.example", "", false}, // İ: strings.ToLower makes it kiwi.example
		{"\u212Aate@example.com", "", false},      // Kelvin sign: strings.ToLower makes it kate@
		{"ｏｐｓ@kiwi.example", "", false},
		{"", "", false},
	} {
		key, ok := EmailKey(tt.email)
		if key != tt.key || ok != tt.ok {
			t.Errorf("EmailKey(%q) = %q, %v; want %q, %v", tt.email, key, ok, tt.key, tt.ok)
		}
	}
}

// TestEmailKeyWithinMailbox: two addresses with one key are one mailbox to
// SamePerson as well, so whatever an email binding grants, separation of
// duties sees as one person.
func TestEmailKeyWithinMailbox(t *testing.T) {
	t.Parallel()
	for _, a := range []string{"ops@kiwi.example", "Ann.Smith+x@Example.COM", `"a b"@example.com`, "x@[127.0.0.1]", "ops@kiwi.example."} {
		b := strings.ToUpper(a)
		ka, _ := EmailKey(a)
		kb, _ := EmailKey(b)
		if ka != kb || Mailbox(a) != Mailbox(b) {
			t.Errorf("%q and %q: keys %q, %q; mailboxes %q, %q", a, b, ka, kb, Mailbox(a), Mailbox(b))
		}
	}
}

// FuzzEmailKey: no two addresses share a key unless they differ in ASCII
// case alone, and then mailbox reads them as one too.
func FuzzEmailKey(f *testing.F) {
	f.Add("ops@kiwi.example", "OPS@kiwi.example")
	f.Add("ops@k\u0130w\u0130.example", "ops@kiwi.example")
	f.Add("\u212Aate@example.com", "kate@example.com")
	f.Fuzz(func(t *testing.T, a, b string) {
		ka, oka := EmailKey(a)
		kb, okb := EmailKey(b)
		if !oka || !okb || ka != kb {
			return
		}
		if !strings.EqualFold(a, b) || len(a) != len(b) {
			t.Fatalf("%q and %q share key %q without differing in ASCII case alone", a, b, ka)
		}
		if Mailbox(a) != Mailbox(b) {
			t.Fatalf("%q and %q share key %q but are two mailboxes to SamePerson (%q, %q)", a, b, ka, Mailbox(a), Mailbox(b))
		}
	})
}
