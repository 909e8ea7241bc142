package views

// Models of the confirmation step every destructive action goes through
// (discard, resolve, reject, cancel): without JavaScript it is a page of
// its own; with it, app.js asks in a dialog and posts the same form with
// ConfirmedField set.

// ConfirmedField is the form field that says the person confirmed the
// action (the confirmation page's button, or app.js after its dialog).
const ConfirmedField = "confirmed"

// ConfirmModel is a confirmation page: what will happen to what, the
// reason (kept, and checked at its field), and the buttons to go on or
// back.
type ConfirmModel struct {
	// Title asks the question: "Discard 3 dead letters?".
	Title string
	// Lead says what happens, and whether it can be undone.
	Lead string
	// Action is where the confirmed form posts; Fields are its hidden
	// fields (the selection, as repeated "id" fields; a version).
	Action string
	Fields []Hidden
	// Items are the first dead letters concerned, More how many others.
	Items []ConfirmItem
	More  int
	// LeftOut are the dead letters of the selection (or filter) the
	// action will not take, by why, so that the page confirms only what
	// it will do and says what it leaves; nil when none.
	LeftOut *LeftOut
	// Reason is the reason field; ReasonLabel its label (empty: no reason
	// field), ReasonRequired whether it must be filled.
	Reason         string
	ReasonLabel    string
	ReasonRequired bool
	// Errors maps "reason" (and "" for the form as a whole) to a message.
	Errors map[string]string
	// Button is the confirming button's label ("Discard 3"); Danger makes
	// it red. Without a Button there is nothing to confirm: the page only
	// says why.
	Button string
	Danger bool
	// BackURL is where "Back" leads, keeping the selection's page.
	BackURL string
}

// ConfirmItem is one dead letter a confirmation concerns.
type ConfirmItem struct {
	URL      string
	Tenant   string
	ItemType string
	MsgID    string
	Error    string
	Status   string
}

// LeftOut is what a discard or resolve leaves out of what was chosen: N
// of the Of selected ("selected") or matching ("matching"; AtLeast when
// more match than were read), by why.
type LeftOut struct {
	N, Of   int
	Chosen  string
	AtLeast bool
	Groups  []LeftOutGroup
	// Verb is the action ("discard", "resolve", "request replays").
	Verb string
}

// LeftOutGroup is the dead letters left out for one reason: held by the
// replay request RequestID (RequestStatus; RequestURL empty where the
// viewer may not read it; FreedBy what frees them,
// replaypolicy.HeldFreedBy), or, when RequestID is 0, in Tenant, where
// the viewer may read them but not do the action, or (Tenant empty) in
// Status. Items are the first of them, each with its tenant (not shown:
// the handler judges a kept list by it). Tenant, and FreedBy which names
// it, came from a producer's subject: the view writes them Untrusted.
type LeftOutGroup struct {
	N             int
	RequestID     int64
	RequestStatus string
	RequestURL    string
	FreedBy       string
	Tenant        string
	Status        string
	Items         []ConfirmItem
}

// Hidden is a hidden form field.
type Hidden struct {
	Name  string
	Value string
}

// FormPageModel is a small form on a page of its own, shown when a form
// embedded elsewhere (an error group's panel) was sent with mistakes: the
// same fields, what was typed, and a message at each bad one.
type FormPageModel struct {
	Title string
	Lead  string
	// LeadTenant, when set, ends Lead with " in <tenant>.", the tenant
	// written as a value from a message is (Untrusted): an error group's
	// tenant is a producer's subject token, which may hide characters.
	LeadTenant string
	// Action is where the form posts; Fields are its hidden fields.
	Action string
	Fields []Hidden
	// Controls are the visible fields, in order.
	Controls []FormControl
	Button   string
	BackURL  string
}

// FormControl is one visible field of a FormPageModel: an input or a select.
type FormControl struct {
	Input  *Input
	Select *Select
}

// leftOutTitle heads a LeftOut: "Left out: 2 of the 4 matching".
func leftOutTitle(l LeftOut) string {
	if l.AtLeast {
		return "Left out: " + Count(int64(l.N)) + " or more of those " + l.Chosen
	}
	return "Left out: " + Count(int64(l.N)) + " of the " + Count(int64(l.Of)) + " " + l.Chosen
}

// leftOutWhy says why dead letters held by no request and in no tenant
// where the viewer may not act are left out of a discard or resolve, after
// "3 dead letters": their status (one of a tenant is written by
// confirmLeftOut itself, the tenant as Untrusted).
func leftOutWhy(status string) string {
	switch status {
	case "replayed", "discarded", "resolved":
		return "already " + Label(status)
	case "replaying":
		return "being replayed"
	case "needs_reconciliation":
		return "wait for a person to settle a replay whose outcome is unknown (on its request's page)"
	case "":
		return "no longer stored, or not yours to act on"
	}
	return "not open (" + Label(status) + ")"
}

// listSep is what follows the i-th of n things written inline (the view
// puts a space after each).
func listSep(i, n int) string {
	if i+1 < n {
		return ","
	}
	return ""
}
