package views

// AuditVerifyAnchor is a head an auditor kept outside the console
// (seq:hash: an earlier verify, an export's chain head, a ticket), given
// to a verification, and what it found.
type AuditVerifyAnchor struct {
	Text  string // as typed; "" when none was given
	Error string // why Text is not an anchor (the chain was not checked)
	Seq   int64
	// Matched: the chain still holds the entry at Seq with the anchor's
	// hash; Reached false: the check stopped before Seq (a break before it).
	Matched bool
	Reached bool
}

// AuditPublicKey is a public key checkpoints and exports are checked
// with: its key id and PEM (what `console audit verify --public-key`
// reads).
type AuditPublicKey struct {
	ID  string
	PEM string
}

// AuditVerifyPage is the verify page: the result of a check (nil when the
// anchor given was not valid, so nothing ran), the anchor, and the keys.
type AuditVerifyPage struct {
	Result *AuditVerifyModel
	Anchor AuditVerifyAnchor
	Keys   []AuditPublicKey
	// Busy: another verification was running, so none was started.
	Busy bool
}
