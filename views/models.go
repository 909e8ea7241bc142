package views

import "time"

// Page is what every full page needs besides its own model: the title, the
// active navigation entry, the signed-in user (nil when signed out), the
// versioned asset paths, flash messages and the request id.
type Page struct {
	// Title is shown as "<Title> · Quarantine" in the browser tab.
	Title string
	// Active is the key of the highlighted navigation entry: "dashboard",
	// "deadletters", "groups", "approvals", "audit", "admin" or "policy".
	Active string
	// User is the signed-in user; nil renders no navigation and a sign-in link.
	User *User
	// Assets are the cache-busted paths of the static files (web.AssetPath).
	// Empty fields fall back to the unversioned /static/ paths.
	Assets Assets
	// Flash messages are shown above the page body, in order.
	Flash []Flash
	// RequestID identifies the request in logs; error pages show it.
	RequestID string
	// TimeZone is how the person wants to see times: "utc" or "local" (the
	// browser's zone; app.js rewrites them, UTC on hover).
	TimeZone string
	// Here is the path and query of the page, for forms that come back to it.
	Here string
	// SaveInPlace: a POST rendered the page (a confirmation, a form's 422),
	// so going back to Here would lose it and what was typed on it: the
	// time zone form saves without leaving it (htmx; without JavaScript it
	// still goes to Here).
	SaveInPlace bool
	// Canonical, when set, is the address of what the page shows when it
	// answers a POST in place (a 409 on a request's action shows the
	// request): app.js puts it in the address bar, so that reload and
	// bookmarks reach the page, not the action.
	Canonical string
}

// Assets are the URL paths of the static files, usually with a ?v= version.
type Assets struct {
	CSS  string
	JS   string
	HTMX string
}

// Flash kinds.
const (
	FlashOK    = "ok"
	FlashError = "error"
	FlashInfo  = "info"
)

// Flash is a one-time message shown at the top of a page.
type Flash struct {
	// Kind is FlashOK, FlashError or FlashInfo.
	Kind string
	Text string
}

// User is the signed-in user as the header shows it.
type User struct {
	Name  string
	Email string
	// EmailVerified is whether the identity provider verified Email; an
	// unverified email is shown as such and cannot be bound to a role.
	EmailVerified bool
	// Identity is issuer|subject, what a binding names when the email is
	// not verified.
	Identity string
	// Roles are the user's roles, one entry per tenant and role. Tenant "*"
	// means every tenant.
	Roles []TenantRole
	// Nav says which navigation entries the user may see.
	Nav Nav
	// LogoutURL is the target of the logout form (POST).
	LogoutURL string
}

// TenantRole is one role the user holds in one tenant.
type TenantRole struct {
	Tenant string
	Role   string
}

// Nav says which navigation entries are shown.
type Nav struct {
	Dashboard   bool
	DeadLetters bool
	Groups      bool
	Replays     bool
	Approvals   bool
	// Awaiting counts the requests waiting for the user's approval: ones
	// they may approve and did not request (and have not approved yet).
	Awaiting int
	Audit    bool
	Admin    bool
	Policy   bool
	Sessions bool
	// Stop: the emergency stop of a tenant's replays.
	Stop bool
}

// AuditFilter is the audit list filter as the user typed it. Each field is
// the query parameter named in its comment.
type AuditFilter struct {
	Actor       string // actor
	Action      string // action
	Tenant      string // tenant
	Object      string // object
	MessageID   string // message_id
	OperationID string // operation_id
	Outcome     string // outcome
	// Request is a replay request id (request): its entries and its
	// items'. The request page links it; the form keeps it hidden.
	Request string
	From    string // from
	To      string // to
}

// AuditListModel is the audit log page.
type AuditListModel struct {
	// Action is the path the filter form is sent to (GET); "/audit" when empty.
	Action string
	Filter AuditFilter
	// Presets are the one-click time ranges.
	Presets []TimePreset
	// Actions, Outcomes and Tenants are the choices of the filter selects;
	// Actions by family (each family's "<family>.*" choice first).
	Actions  []ActionChoices
	Outcomes []string
	Tenants  []string
	Rows     []AuditRow
	// NextURL leads to older rows and PrevURL to newer ones; empty when none.
	NextURL string
	PrevURL string
	// ExportCSVURL and ExportJSONLURL download the filtered log.
	ExportCSVURL   string
	ExportJSONLURL string
	// Checkpoint is the newest signed head of the chain; nil when none was
	// signed yet.
	Checkpoint *AuditCheckpoint
	// CanVerify shows the "Verify chain" button (auditors of every tenant).
	CanVerify bool
	// Keys are the public keys exports are checked with, listed on the page
	// for a reader who cannot verify here (the verify result lists them for
	// the others): an auditor of some tenants checks their exports offline.
	Keys []AuditPublicKey
	// Errors maps a filter query parameter (see AuditFilter) to a message
	// about its value.
	Errors map[string]string
}

// AuditCheckpoint is a signed head of the audit chain as the auditor's page
// shows it.
type AuditCheckpoint struct {
	Seq    int64
	Hash   string // hex
	At     time.Time
	Reason string
	KeyID  string
	// Verified is false when no checkpoint verifies with the console's
	// keys: the fields above are then empty.
	Verified bool
	// Since is how many entries follow it, not yet signed.
	Since int64
	// OthersHidden says Since is left out (zero) for a reader of only
	// some tenants: it counts every tenant's entries.
	OthersHidden bool
	// Unverified checkpoints are newer than it and do not verify (the
	// newest at seq NewestUnverified): not the console's.
	Unverified       int64
	NewestUnverified int64
}

// AuditRow is one line of the audit list.
type AuditRow struct {
	Seq         int64
	At          time.Time
	Actor       string
	Tenant      string
	Action      string
	ObjectType  string
	ObjectID    string
	MessageID   string
	OperationID string
	Outcome     string
	Reason      string
	// URL is the audit event page of this row; ObjectURL and MessageURL
	// lead to the object (a dead letter, a replay request, an error group)
	// and to the dead letters of the message id, when there is a page;
	// OperationURL to every entry of the operation id.
	URL          string
	ObjectURL    string
	MessageURL   string
	OperationURL string
	// ObjectText, when set, is written in place of an object that has no
	// page the reader may open, unlinked: "#12 (draft)".
	ObjectText string
	// About, on a page's trail, names the row's object when it is not the
	// page's own ("dead letter #83": another dead letter of the message),
	// linked to ObjectURL when set; "" for a row about the page's object.
	About string
}

// AuditEventModel is one audit event in full.
type AuditEventModel struct {
	Seq          int64
	At           time.Time
	ActorIssuer  string
	ActorSubject string
	ActorEmail   string
	Tenant       string
	Action       string
	ObjectType   string
	ObjectID     string
	MessageID    string
	OperationID  string
	RequestID    string
	Reason       string
	Outcome      string
	RemoteAddr   string
	UserAgent    string
	// Before and After are pretty-printed JSON, or empty.
	Before string
	After  string
	// PrevHash and Hash are the hex chain hashes.
	PrevHash string
	Hash     string
	// ObjectURL links to the object; empty when there is no page for it.
	ObjectURL string
	// ObjectText, when set, is written in place of an object that has no
	// page the reader may open, unlinked: "#12 (draft)".
	ObjectText string
	// OperationURL lists every entry of the operation id; empty without one.
	OperationURL string
	// ListURL leads back to the audit list; "/audit" when empty.
	ListURL string
}

// BindingsModel is the role bindings admin page.
type BindingsModel struct {
	Bindings []Binding
	// GroupRules come from configuration and are read-only.
	GroupRules []GroupRule
	// GroupPrefix is AUTHZ_GROUP_PREFIX: groups named <prefix><tenant>:<role>
	// give that role. Empty: no group gives a role by its name.
	GroupPrefix string
	Form        BindingForm
	// Roles and Tenants are the choices of the add form. Include "*" in
	// Tenants to offer "all tenants".
	Roles   []string
	Tenants []string
	// AddURL is the target of the add form (POST).
	AddURL string
	// Holders are who holds which role, from bindings and from groups, in
	// the tenants the admin may read.
	Holders []RoleHolder
}

// RoleHolder is someone holding a role in a tenant ("*": every tenant),
// from a binding or from an identity-provider group.
type RoleHolder struct {
	Tenant string
	Role   string
	Person string
	// Group gives the role, as the provider last said at Seen; empty for a
	// binding.
	Group string
	Seen  time.Time
}

// Binding is one role binding stored in the database.
type Binding struct {
	ID        int64
	Subject   string
	Email     string
	Role      string
	Tenant    string
	CreatedBy string
	CreatedAt time.Time
	// DeleteURL is the target of the delete form (POST).
	DeleteURL string
	// Unmatched says why the binding gives nobody anything ("": it is in
	// force).
	Unmatched string
}

// GroupRule grants a role to the members of an identity-provider group.
type GroupRule struct {
	Group  string
	Role   string
	Tenant string
}

// BindingForm is the add-binding form as submitted. Errors maps a form
// field ("email", "subject", "role", "tenant") to a message; the key ""
// holds a message about the form as a whole.
type BindingForm struct {
	Email   string
	Subject string
	Role    string
	Tenant  string
	Errors  map[string]string
}

// SessionsModel is the admin page of people signed in now.
type SessionsModel struct {
	People []SessionPerson
	// RevokeURL is the target of each person's revoke form (POST, with
	// issuer and subject).
	RevokeURL string
}

// SessionPerson is one person with live sessions.
type SessionPerson struct {
	Name     string
	Email    string // with "(unverified)" when the provider did not verify it
	Issuer   string
	Subject  string
	Sessions int
	// LastLogin is their newest sign-in.
	LastLogin time.Time
	// Own says it is the admin viewing the page: signing them out ends
	// this session too.
	Own bool
}

// TimePreset is a one-click time range of a filter ("1 h": from an hour
// ago until now), as a link to the filtered page.
type TimePreset struct {
	Label  string
	URL    string
	Active bool
}

// ActionChoices are the actions of one family for the audit filter: the
// family as a whole ("replay.*") and each of its actions.
type ActionChoices struct {
	Family  string
	Actions []string
}

// AuditVerifyModel is the result of verifying the audit chain as `console
// audit verify` does: the hash chain and every checkpoint's signature.
type AuditVerifyModel struct {
	OK bool
	// Summary is the one line `console audit verify` prints.
	Summary string
	Rows    int64
	HeadSeq int64
	Head    string
	// FirstBad and Problem say where the chain breaks (OK false).
	FirstBad int64
	Problem  string
	// More are the problems found after the first (the walk goes on past
	// one), up to the bound verify keeps; ProblemCount counts them all,
	// the first included.
	More         []string
	ProblemCount int64
	// Warnings are findings that do not break the chain (a checkpoint
	// whose signature fails, vouched for by a later one).
	Warnings []string
	// Checkpoints verified, the last of them, and the keys trusted.
	Checkpoints    int
	LastCheckpoint int64
	Keys           []string
	At             time.Time
}
