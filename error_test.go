package quarantine

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorCodeAndMessage(t *testing.T) {
	t.Parallel()
	conflict := Errorf(ECONFLICT, "request %d is %s", 7, "done")
	tests := []struct {
		name     string
		err      error
		code     string
		message  string
		asString string
	}{
		{"Nil", nil, "", "", ""},
		{"Plain", conflict, ECONFLICT, "request 7 is done", "conflict: request 7 is done"},
		{"Wrapped", fmt.Errorf("approve replay 7: %w", conflict), ECONFLICT, "request 7 is done", "approve replay 7: conflict: request 7 is done"},
		{"WrappedTwice", fmt.Errorf("a: %w", fmt.Errorf("b: %w", Errorf(ENOTFOUND, "no such thing"))), ENOTFOUND, "no such thing", "a: b: not_found: no such thing"},
		{"Joined", errors.Join(errors.New("x"), Errorf(EINVALID, "bad")), EINVALID, "bad", "x\ninvalid: bad"},
		{"NotCoded", errors.New("connection refused"), EINTERNAL, "Internal error.", "connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ErrorCode(tt.err); got != tt.code {
				t.Errorf("ErrorCode = %q, want %q", got, tt.code)
			}
			if got := ErrorMessage(tt.err); got != tt.message {
				t.Errorf("ErrorMessage = %q, want %q", got, tt.message)
			}
			if tt.err != nil && tt.err.Error() != tt.asString {
				t.Errorf("Error() = %q, want %q", tt.err.Error(), tt.asString)
			}
		})
	}
}

// TestActorSameAs: SameIdentity (what replaced SameAs for continuity and
// for what a match grants) matches the exact issuer and subject only, never
// by email; replaypolicy.SamePerson is the looser rule for separation of
// duties (TestSamePerson there).
func TestActorSameAs(t *testing.T) {
	t.Parallel()
	ann := Actor{Issuer: "https://idp", Subject: "ann", Email: "ann@example.com", EmailVerified: true}
	tests := []struct {
		name string
		a, b Actor
		want bool
	}{
		{"SameIdentity", ann, ann, true},
		{"OtherEmail", ann, Actor{Issuer: "https://idp", Subject: "ann", Email: "alias@example.com"}, true},
		{"OtherIssuer", ann, Actor{Issuer: "https://other", Subject: "ann"}, false},
		{"OtherSubject", ann, Actor{Issuer: "https://idp", Subject: "bob"}, false},
		{"Unidentified", Actor{Email: "ann@example.com"}, Actor{Email: "ann@example.com"}, false},
		{"NoIssuer", Actor{Subject: "ann"}, Actor{Subject: "ann"}, false},
		{"SameVerifiedEmailOtherSubject", ann, Actor{Issuer: "https://idp", Subject: "ann-2", Email: "ann@example.com", EmailVerified: true}, false},
		{"SameVerifiedEmailOtherIssuer", ann, Actor{Issuer: "https://other", Subject: "ann-2", Email: "ANN@example.com", EmailVerified: true}, false},
		{"SameEmailUnverified", ann, Actor{Issuer: "https://other", Subject: "ann-2", Email: "ann@example.com"}, false},
	}
	for _, tt := range tests {
		if got := tt.a.SameIdentity(tt.b); got != tt.want {
			t.Errorf("%s: SameIdentity = %v, want %v", tt.name, got, tt.want)
		}
		if got := tt.b.SameIdentity(tt.a); got != tt.want {
			t.Errorf("%s: SameIdentity is not symmetric", tt.name)
		}
	}
	if got := (Actor{Subject: "u-1"}).Display(); got != "u-1" {
		t.Errorf("Display falls back to the subject, got %q", got)
	}
	if got := (Actor{Subject: "u-1", Email: "e@x", Name: "Ann"}).Display(); got != "Ann" {
		t.Errorf("Display prefers the name, got %q", got)
	}
}

func TestAttribution(t *testing.T) {
	tests := []struct {
		name string
		a    Actor
		want string
	}{
		{"VerifiedEmail", Actor{Subject: "u-1", Email: "ann@example.com", EmailVerified: true, Name: "Ann"}, "ann@example.com"},
		{"UnverifiedEmailMarked", Actor{Subject: "u-1", Email: "ann@example.com", Name: "Ann"}, "ann@example.com (unverified)"},
		{"NoEmailSubject", Actor{Subject: "u-1", Name: "Ann"}, "u-1"},
	}
	for _, tt := range tests {
		if got := tt.a.Attribution(); got != tt.want {
			t.Errorf("%s: Attribution = %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := (Actor{Subject: "u-1", Email: "ann@example.com"}).Display(); got != "ann@example.com (unverified)" {
		t.Errorf("Display without a name is the attribution, got %q", got)
	}
}

func TestRecordedAuthor(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name                   string
		issuer, subject, email string
		verified               *bool
		want                   string
	}{
		{"Verified", "https://idp", "u-1", "ann@example.com", &yes, "ann@example.com"},
		{"UnverifiedMarked", "https://idp", "u-1", "ann@example.com", &no, "ann@example.com (unverified)"},
		{"NoEmailSubject", "https://idp", "u-1", "", &no, "u-1"},
		{"OldRecordEmailAsItWas", "https://idp", "u-1", "ann@example.com", nil, "ann@example.com"},
		{"OldRecordNoEmailSubject", "https://idp", "u-1", "", nil, "u-1"},
	}
	for _, tt := range tests {
		if got := RecordedAuthor(tt.issuer, tt.subject, tt.email, tt.verified); got != tt.want {
			t.Errorf("%s: RecordedAuthor = %q, want %q", tt.name, got, tt.want)
		}
	}
}
