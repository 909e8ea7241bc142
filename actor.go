package quarantine

// Actor is a person as the identity provider names them (the JSON names are
// the ID token's claims). Issuer and Subject identify them; Email is what
// people read and, only when EmailVerified, what email role bindings match;
// Name is for display. The zero Actor is the console itself (a replay
// worker, a policy change at start).
type Actor struct {
	Issuer        string `json:"iss"`
	Subject       string `json:"sub"`
	Email         string `json:"email"`
	EmailVerified bool   `json:"email_verified"`
	Name          string `json:"name"`
}

// Identified reports whether a has both an issuer and a subject.
func (a Actor) Identified() bool { return a.Issuer != "" && a.Subject != "" }

// SameIdentity reports whether a and b are one identity: both identified,
// with the same issuer and subject. It is the question wherever a match
// lets someone go on or do something: a refreshed sign-in must be the
// identity that signed in, and only the requester may cancel, submit or
// edit their own request. No email, verified or not, makes two identities
// one here. (Whether two identities may be one person, for separation of
// duties, is replaypolicy.SamePerson: a looser rule that only ever takes
// rights away.)
func (a Actor) SameIdentity(b Actor) bool {
	return a.Identified() && b.Identified() && a.Issuer == b.Issuer && a.Subject == b.Subject
}

// Display is how the console names a: the name, else the email (marked
// "(unverified)" when the provider did not verify it: anyone may claim any
// address at a provider that does not check), else the subject.
func (a Actor) Display() string {
	if a.Name != "" {
		return a.Name
	}
	return a.Attribution()
}

// Attribution is how a text the console stores names a as the one who
// acted ("emergency stop by …", "applied, as … found", who last changed a
// group): the email, marked "(unverified)" when the provider did not
// verify it (as Display marks it), else the subject. Never the display
// name: people set it themselves, and a stored text outlives the session
// that could tell who they were. Every stored text that names a person
// names them with it, so a claimed address never reads as a verified one.
func (a Actor) Attribution() string {
	switch {
	case a.Email != "" && !a.EmailVerified:
		return a.Email + " (unverified)"
	case a.Email != "":
		return a.Email
	}
	return a.Subject
}

// RecordedAuthor names the author of a stored record (a role binding, a
// fix marker) by what it kept of them: as Display names them (an
// unverified email marked, no email the subject; a name is never kept),
// or, for a record from before whether the email was verified was kept
// (verified nil), by its email as it was, else its subject.
func RecordedAuthor(issuer, subject, email string, verified *bool) string {
	if verified == nil {
		if email != "" {
			return email
		}
		return subject
	}
	return Actor{Issuer: issuer, Subject: subject, Email: email, EmailVerified: *verified}.Display()
}

// RequestMeta is where an action came from: the HTTP request id (to join
// with logs), the client address and its user agent. Every audit row of an
// action carries it; actions outside a request leave it empty.
type RequestMeta struct {
	RequestID  string
	RemoteAddr string
	UserAgent  string
}
