package web

import (
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/views"
)

// deadLetterAuditType is the object type of dead letters in the audit log.
const deadLetterAuditType = "dead_letter"

// deadLetterShow is one dead letter in full. Another tenant's dead letter
// answers 404, like a missing one, and the attempt is audited.
func (s *Server) deadLetterShow(c echo.Context) error {
	return s.showDeadLetter(c, http.StatusOK, nil)
}

// showDeadLetter writes the page of the dead letter of the :id parameter
// with status, and the fix form as typed (nil: empty) with its messages.
func (s *Server) showDeadLetter(c echo.Context, status int, fix *views.FixForm) error {
	ctx := c.Request().Context()
	id, ok := deadLetterID(c)
	if !ok {
		return quarantine.Errorf(quarantine.ENOTFOUND, "There is no such dead letter.")
	}
	u := userOf(c)
	// The route's locator read the dead letter and what the page shows of
	// it in one round trip (a form's route did not: read it here); its
	// audit trail (which needs its message id and tenant) is the other.
	found, ok := deadLetterFound(c)
	if !ok {
		var err error
		if found, err = s.readDeadLetterPage(ctx, id); err != nil {
			return err
		}
	}
	d := found.deadLetter
	if !slices.Contains(s.deadLetterTenants(ctx, u, authz.ActRead), d.Tenant) { // located: so never, but twice is cheap
		return s.notFoundDenied(c, d.Tenant, deadLetterAuditType, c.Param("id"))
	}
	trail, err := s.deadLetterTrail(c, d.DeadLetter)
	if err != nil {
		return err
	}
	m := deadLetterModel(d, authz.Now(ctx))
	m.Audit = trail
	m.ListURL = views.PathDeadLetters
	if s.mayDownload(u, d.Tenant) {
		m.Payload.DownloadURL = deadLetterURL(d.ID) + "/payload"
	}
	if s.deps.Replays != nil {
		if t := s.deps.Replays.Policy(); t != nil {
			// The class a replay of it is judged at, as the actions panel
			// and the rules judge it: its error class's floor and the
			// generation limit count, not only its item type and subject.
			c := t.Classify(replaypolicy.Key{ItemType: d.ItemType, Subject: d.OriginalSubject, ErrorClass: string(dlq.UnreadableErrorClass(d.ErrorClass, d.Flags)),
				Generation: found.generation()})
			m.Retention = retentionNotice(t, found, m.Now)
			m.PolicyClass, m.PolicyText = string(c.Class), t.Describe(c.Class)
			m.PolicyRaised = policyRaised(c, t.ClassOf(d.ItemType, d.OriginalSubject).Class)
			if rule := c.Rule(); rule >= 0 {
				r := t.Rules()[rule]
				m.PolicyRule = strings.TrimSpace(strings.Join([]string{r.ItemType, r.Subject}, " "))
			}
		}
	}
	m.ReplayPanel = s.replayPanel(c, found, fix)
	return s.render(c, status, views.DeadLetterShow(s.page(c, "Dead letter "+c.Param("id"), "deadletters"), m))
}

// retentionNotice is when the retention terms of t remove the dead letter
// found, read at now: nil when they keep it for good, or when they are not
// the active terms (found.activeTerms, read with the page), whose keeper
// alone removes anything. Its age counts as retention counts it: from the
// later of when it was dead-lettered and when the console received it. A
// replay request not yet closed that names it (a draft too), or one that
// still holds it, keeps it whatever its age: found.hold, the keeper's own
// rule (dlq.RetentionHold), read with the page.
func retentionNotice(t *replaypolicy.Table, found *foundDeadLetter, now time.Time) *views.RetentionNotice {
	d := found.deadLetter
	if found.activeTerms.Stale(replay.RetentionVersion(t.Retention())) {
		return nil
	}
	k, ok := t.Retention().For(d.Tenant, d.ItemType, string(d.Status))
	if !ok || k.Forever {
		return nil
	}
	if h := found.hold; h.Request != 0 {
		return &views.RetentionNotice{HeldBy: h.Request, HeldStatus: h.Status}
	}
	from := d.DeadLetteredAt
	if d.ReceivedAt.After(from) {
		from = d.ReceivedAt
	}
	at := from.Add(k.For)
	return &views.RetentionNotice{From: at, Keep: k.String(), Status: string(d.Status), Unresolved: d.Status.Unresolved(),
		Soon: at.Sub(now) < 7*24*time.Hour}
}

// policyRaised says why class c of a dead letter is stricter than ruled,
// the class its item type and subject map to: its error class's floor, or
// the generation limit of a message that keeps coming back; "" when it is
// not.
func policyRaised(c replaypolicy.Classing, ruled replaypolicy.Class) string {
	switch {
	case c.ByLoop:
		return fmt.Sprintf("Stricter than the %s its rule gives: it came back from %d replays of its message, and from generation %d only manual may replay it.",
			views.Label(string(ruled)), c.Generation, c.Limit)
	case c.ByError:
		return fmt.Sprintf("Stricter than the %s its rule gives: its error class %q replays at least as %s.",
			views.Label(string(ruled)), c.ErrorClass, views.Label(string(c.ErrorFloor)))
	}
	return ""
}

// deadLetterModel turns a dead letter as its page reads it (dlq.Preview:
// the long values cut, with their whole sizes) into the page model; message
// data stays text (the view escapes it).
func deadLetterModel(d dlq.Detail, now time.Time) views.DeadLetterDetailModel {
	m := views.DeadLetterDetailModel{
		ID: d.ID, Tenant: d.Tenant, ItemType: d.ItemType, Status: string(d.Status), Version: d.Version,
		Subject: d.Subject, OriginalSubject: d.OriginalSubject, SourceKind: d.SourceKind, SourceStream: d.SourceStream,
		SourceConsumer: d.SourceConsumer, MsgID: d.MsgID, MsgIDDerived: d.MsgIDDerived, Delivery: d.Delivery, Flags: d.Flags,
		OperationID: d.OperationID, CorrelationID: d.CorrelationID, Principal: d.Principal, Consumer: d.Consumer,
		Error: d.Error, ErrorClass: string(d.ErrorClass), Stack: d.Stack, DeadLetteredAt: d.DeadLetteredAt,
		ReceivedAt: d.ReceivedAt, UpdatedAt: d.UpdatedAt, Malformed: d.Malformed, MalformedReasons: d.MalformedReasons,
		Fingerprint: d.Fingerprint, GroupURL: listURL("group", d.Fingerprint), Now: now,
		Payload:  views.NewPayloadView(d.Payload, int64(d.PayloadSize), d.PayloadUnavailable),
		Advisory: prettyJSON(d.Advisory),
	}
	m.Payload.SHA256 = hex.EncodeToString(d.PayloadSHA256)
	m.DeliveryName, m.DeliveryStoredAt = splitDelivery(d.Delivery)
	if d.ErrorSize > int64(len(d.Error)) {
		m.ErrorSize, m.ErrorURL = d.ErrorSize, deadLetterURL(d.ID)+"/error.txt"
	}
	if d.StackSize > int64(len(d.Stack)) {
		m.StackSize, m.StackURL = d.StackSize, deadLetterURL(d.ID)+"/stack.txt"
	}
	for label, v := range map[string]*string{"Message id": &m.MsgID, "Operation id": &m.OperationID, "Correlation id": &m.CorrelationID,
		"Principal": &m.Principal, "Original subject": &m.OriginalSubject, "DLQ subject": &m.Subject} {
		if cut, ok := cutText(*v, views.IDShownMax); ok {
			if m.IDSizes == nil {
				m.IDSizes = map[string]int64{}
			}
			m.IDSizes[label] = int64(len(*v))
			*v = cut
		}
	}
	if d.SourceSeq != nil {
		m.SourceSeq = *d.SourceSeq
	}
	if d.HeaderBlockSize > 0 {
		m.HeaderBlock = views.NewPayloadView(d.HeaderBlock, int64(d.HeaderBlockSize), false)
		m.HeaderBlockNote = "exactly as the stream stored it"
		if slices.Contains(d.Flags, "header_block_reencoded") {
			m.HeaderBlockNote = "written again from the headers the NATS client read"
		}
	}
	if d.Attempts != nil {
		m.Attempts = strconv.Itoa(int(*d.Attempts))
	}
	if d.FirstFailedAt != nil {
		m.FirstFailedAt = *d.FirstFailedAt
	}
	if d.LastFailedAt != nil {
		m.LastFailedAt = *d.LastFailedAt
	}
	// d holds the first dlq.PreviewHeadersMax of its d.HeaderCount headers,
	// names and values cut: a producer may send hundreds of thousands
	// (200,000 made a page of 32 MB), and a megabyte in one.
	hs, err := d.ShownHeaders()
	if err != nil {
		value, _ := cutText(string(d.HeadersJSON), dlq.PreviewHeaderTextMax)
		m.Headers = []views.HeaderRow{{Name: "(headers could not be decoded)", Value: value, Binary: true, Cut: true}}
	}
	m.HeadersMore, m.ReplayAdds = max(d.HeaderCount-len(hs), 0), replay.OwnHeaders
	for _, h := range hs {
		row := views.HeaderRow{Name: h.Name, Value: h.Value, Binary: h.Encoding != "", Cut: h.ValueSize > len(h.Value),
			NotSent: !replay.Sent(h.Name, h.NameEncoding != "")}
		if h.NameEncoding != "" {
			row.Name = "base64:" + h.Name
		}
		m.Headers = append(m.Headers, row)
	}
	if m.HeadersMore > 0 || slices.ContainsFunc(m.Headers, func(h views.HeaderRow) bool { return h.Cut }) {
		m.HeadersURL = deadLetterURL(d.ID) + "/headers.json"
	}
	return m
}

// cutText returns s cut to max bytes on a character boundary, and whether
// it was cut.
func cutText(s string, max int) (string, bool) {
	if len(s) <= max {
		return s, false
	}
	return strings.ToValidUTF8(s[:max], ""), true
}

// deadLetterTrail is the dead letter's audit trail, oldest first: entries
// about the object and entries naming its message id in its tenant
// (audit.Trail leaves out those about the message id on another subject).
// A row about another object, another dead letter of the message (one
// dead-lettered again, or one no longer kept), says which (trailAbout):
// the page never shows what was done to another dead letter as done to
// this one (TestRevAudit21TrailShowsAnotherSubjectsMessageAsThisOne).
func (s *Server) deadLetterTrail(c echo.Context, d dlq.DeadLetter) ([]views.AuditRow, error) {
	ctx := c.Request().Context()
	id := strconv.FormatInt(d.ID, 10)
	entries, err := audit.Trail(ctx, s.deps.Pool, deadLetterAuditType, id, d.MsgID, d.Tenant, audit.DefaultLimit)
	if err != nil {
		return nil, err
	}
	linkable := s.deps.Access.Can(userOf(c), d.Tenant, authz.ObjAudit, authz.ActRead)
	rows := make([]views.AuditRow, 0, len(entries))
	for _, e := range entries {
		r := auditRow(e)
		if !linkable {
			r.URL = ""
		}
		if e.ObjectType != deadLetterAuditType || e.ObjectID != id {
			r.About = trailAbout(e)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// trailAbout names the object of entry e as a trail row writes it after
// "about": "dead letter #83", "replay request #4", else the type and id as
// the log shows them ("fix_marker 7").
func trailAbout(e audit.Entry) string {
	switch e.ObjectType {
	case deadLetterAuditType:
		return "dead letter #" + e.ObjectID
	case "replay_request":
		return "replay request #" + e.ObjectID
	}
	return strings.TrimSpace(e.ObjectType + " " + e.ObjectID)
}

// splitDelivery reads a delivery key ("DLQ #80 stored <RFC 3339 time>",
// dlq's setDelivery) as the stream message's name and the time the stream
// stored it, so that the page writes the time as it writes every other.
// Anything else gives "" (the page shows the key as it is).
func splitDelivery(delivery string) (string, time.Time) {
	name, at, ok := strings.Cut(delivery, " stored ")
	if !ok {
		return "", time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return "", time.Time{}
	}
	return name, t
}
