package replaypolicy

import (
	"testing"

	"github.com/quarantine-console/quarantine"
)

// TestRev43GmailDotsAndGooglemailAreOneMailbox: Gmail delivers
// ann.smith@gmail.com, annsmith@gmail.com and annsmith@googlemail.com to
// one inbox, so two identities verified with those spellings (a Dex in
// front of GitHub and Google) are one person to separation of duties.
// Elsewhere dots still make two mailboxes, and EmailKey, which grants,
// reads none of it.
func TestRev43GmailDotsAndGooglemailAreOneMailbox(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		a, b string
		same bool
	}{
		{"DotsAtGmail", "ann.smith@gmail.com", "annsmith@gmail.com", true},
		{"ManyDotsAtGmail", "a.n.n.s.m.i.t.h@gmail.com", "annsmith@gmail.com", true},
		{"Googlemail", "annsmith@googlemail.com", "annsmith@gmail.com", true},
		{"DotsAtGooglemail", "Ann.Smith@GoogleMail.com", "annsmith@gmail.com", true},
		{"DotsInTheTag", "ann.smith+ops.team@gmail.com", "annsmith@gmail.com", true},
		{"CaseAndTrailingDot", "ANN.SMITH@GMAIL.COM.", "annsmith@gmail.com", true},
		{"QuotedAtGmail", `"ann.smith"@gmail.com`, "annsmith@gmail.com", true},
		{"DotsElsewhere", "ann.smith@example.com", "annsmith@example.com", false},
		{"GmailSubdomain", "ann.smith@mail.gmail.com", "annsmith@mail.gmail.com", false},
		{"LookalikeDomain", "ann.smith@gmail.co", "annsmith@gmail.co", false},
		{"OtherPersonAtGmail", "ann.smith@gmail.com", "annsmyth@gmail.com", false},
		{"GmailAndElsewhere", "annsmith@gmail.com", "annsmith@example.com", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := quarantine.Actor{Issuer: "https://dex.example", Subject: "github-ann", Email: tt.a, EmailVerified: true}
			b := quarantine.Actor{Issuer: "https://dex.example", Subject: "google-ann", Email: tt.b, EmailVerified: true}
			if got := SamePerson(a, b); got != tt.same {
				t.Errorf("SamePerson(%q, %q) = %v, want %v (mailboxes %q and %q)", tt.a, tt.b, got, tt.same, Mailbox(tt.a), Mailbox(tt.b))
			}
		})
	}
	for _, e := range []string{"ann.smith@gmail.com", "annsmith@googlemail.com"} {
		if key, _ := EmailKey(e); key != e {
			t.Errorf("EmailKey(%q) = %q: a key that grants drops no dot and maps no domain", e, key)
		}
	}
}
