package dlq

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/quarantine-console/quarantine"
)

// Received is a message as it came off a stream: the input of ParseDLQ.
type Received struct {
	Subject string
	// Header is the headers as the NATS client read them: nil when the
	// message had no header block or the client could not read it.
	Header map[string][]string
	// HeaderBlock, when not nil, is the header block exactly as the stream
	// stored it (read again from the stream, see Ingester); it is parsed
	// leniently and takes the place of Header. Empty: the message had none.
	HeaderBlock []byte
	// HeaderBlockErr says why the header block could not be read again.
	HeaderBlockErr error
	Data           []byte
	// PayloadErr says why a delivery that may have come without its
	// payload (no payload and a Nats-Msg-Size header, as a consumer made
	// headers only delivers a message) could not be read whole from the
	// stream: Header and Data are then what was delivered.
	PayloadErr error
	Stream     string    // stream that stored it
	Seq        uint64    // its sequence in that stream; 0 when unknown
	Time       time.Time // when that stream stored it
	// MetadataErr says why the delivery's JetStream metadata (stream,
	// sequence, time) could not be read; Stream is then the DLQ stream and
	// Time when it was received.
	MetadataErr error
}

// HeaderValue is one received header value, kept exactly. Value holds the
// text, or its base64 when Encoding is "base64" (the value was not valid
// UTF-8 or held NUL, which PostgreSQL text cannot store).
type HeaderValue struct {
	Name         string `json:"name"`
	NameEncoding string `json:"name_encoding,omitempty"`
	Value        string `json:"value"`
	Encoding     string `json:"encoding,omitempty"`
}

// Record is a dead letter ready to store: every field of the header
// contract, the raw headers and payload, and where it came from.
type Record struct {
	Tenant          string
	ItemType        string
	Subject         string
	OriginalSubject string
	MsgID           string
	MsgIDDerived    bool
	OperationID     string
	CorrelationID   string
	Principal       string
	Consumer        string
	Error           string
	ErrorClass      ErrorClass
	Stack           string
	Attempts        *int32
	FirstFailedAt   *time.Time
	LastFailedAt    *time.Time
	DeadLetteredAt  time.Time

	Headers []HeaderValue
	// HeaderBlock is the header block exactly as stored, when the ingester
	// had it (see Received.HeaderBlock); nil otherwise.
	HeaderBlock        []byte
	Payload            []byte
	PayloadSHA256      [32]byte
	PayloadUnavailable bool

	Fingerprint string
	// Flags are short codes of what was wrong or unusual (oversized:msg_id,
	// implausible:attempts, header_line_skipped, raw_form...; see
	// docs/header-contract.md), MalformedReasons a sentence for each.
	Flags            []string
	MalformedReasons []string

	SourceKind     string
	SourceStream   string
	SourceSeq      uint64 // 0: unknown (stored as NULL)
	SourceConsumer string
	Advisory       []byte // JSON of the advisory, for advisory rows

	// Delivery names the stream message this record was made from (see
	// setDelivery) and SourceKey is the unique key derived from it, so a
	// redelivery never makes a second row.
	Delivery  string
	SourceKey [32]byte
	// storedAt is when the stream named in Delivery stored the message
	// (setDelivery), as the NATS server's clock gave it: checkStoredAt
	// moves DeadLetteredAt, never it. Zero when unknown (the delivery's
	// metadata unreadable). Ingest lag is measured from it (ingestLag).
	storedAt time.Time
	// idTime is the stored time a derived message id names
	// (derivedMsgID): the delivery's (setDelivery) or, for an advisory's
	// record, its original's (ParseAdvisory: where and when the message
	// the id names lived), so that every form of the record (RawForm, the
	// position form) derives the same id.
	idTime time.Time
	// arrivedAt is when the record was made, set only when checkStoredAt
	// found the stored time implausible: the latest time the dead letter
	// can have been stored, which checkPlausible judges failure times by.
	arrivedAt time.Time

	// ReplayOf is the dead letter this one says it is a replay of
	// (Dlq-Replay-Of), 0 for none; Generation is set when Store.Insert
	// links it (see linkReplays), which also drops a claim it cannot.
	ReplayOf   int64
	Generation int32
	// replayContext holds, for an advisory's record, the operation and
	// correlation ids its original carried, until its replay claim is
	// confirmed (upstreamContext).
	replayContext *replayContext
	// moreReasons counts the sentences not kept (flag), moreAt is where
	// the one that counts them is among MalformedReasons.
	moreReasons, moreAt int
}

// maxReasons is how many problems of a message are said each in a
// sentence, past the first of each kind (flag code), which is always said:
// the rest are counted in one more ("and N more"), their codes among the
// flags. A message can repeat a header thousands of times (a Dlq-Left-Out
// per line), and its sentences would be many times the message's size;
// the number of kinds is bounded by the contract's fields.
const maxReasons = 20

// Malformed reports whether anything received was flagged.
func (r *Record) Malformed() bool { return len(r.MalformedReasons) > 0 }

// flag records a problem: its code (once) and a sentence saying what and
// why. Codes are ours, ASCII, without commas (they were once stored joined
// by commas, and a raw form keeps them so).
func (r *Record) flag(code, format string, args ...any) {
	code = strings.ReplaceAll(code, ",", ";")
	fresh := !slices.Contains(r.Flags, code)
	if fresh {
		r.Flags = append(r.Flags, code)
	}
	if fresh || len(r.MalformedReasons) < maxReasons {
		r.MalformedReasons = append(r.MalformedReasons, fmt.Sprintf(format, args...))
		return
	}
	r.moreReasons++
	if r.moreReasons == 1 {
		r.moreAt = len(r.MalformedReasons)
		r.MalformedReasons = append(r.MalformedReasons, "and 1 more problem of this message, of a kind said above")
		return
	}
	r.MalformedReasons[r.moreAt] = fmt.Sprintf("and %d more problems of this message, of the kinds said above", r.moreReasons)
}

// ParseDLQ turns a message from the DLQ stream into a Record. It never fails:
// anything missing, broken, oversized or implausible is flagged (Flags and
// MalformedReasons) and everything received is kept. prefix is the subject
// prefix (e.g. "dlq"); tenant and item type come from the subject
// dlq.<tenant>.<item_type...>, and a header that disagrees does not move the
// message (the subject wins).
func ParseDLQ(prefix string, m Received) (r Record) {
	defer survive(SourceDLQ, m, &r)
	return parseDLQ(prefix, m)
}

// parseDLQ is ParseDLQ without its guard (survive).
func parseDLQ(prefix string, m Received) Record {
	if f := parseFault.Load(); f != nil {
		(*f)(m)
	}
	r := Record{
		SourceKind:     SourceDLQ,
		SourceStream:   m.Stream,
		SourceSeq:      m.Seq,
		DeadLetteredAt: m.Time,
	}
	r.setDelivery(m)
	r.checkStoredAt(time.Now())
	r.Subject = r.text("subject", "the subject", m.Subject)
	h := r.restoreUnsendable(r.headerView(m, true))
	r.Headers = encodeHeaders(h)
	classes := errorClassesSent(h)
	spellings := otherSpellings(h)
	conflicts := conflictsSent(h, spellings, SourceDLQ)
	h = r.contractView(h, spellings)
	r.setPayload(m.Data)
	if m.PayloadErr != nil {
		r.payloadUnverified(m)
	}

	subjTenant, subjType := splitDLQSubject(prefix, m.Subject)
	hdrTenant := r.header(h, HeaderTenant)
	hdrType := r.header(h, HeaderItemType)
	tenant := r.tenantToken(subjTenant)
	if hdrTenant != "" && hdrTenant != tenant && (tenant != "" || subjTenant == "") { // an invalid token: flagged already
		r.flag("mismatch:tenant", "%s %s disagrees with the subject's tenant %s; the subject wins", HeaderTenant, short(hdrTenant), short(tenant))
	}
	switch {
	case subjType != "":
		r.ItemType = r.text("item_type", "the subject's item type", subjType)
		r.checkItemType("the subject's item type", subjType)
		if hdrType != "" && hdrType != r.ItemType {
			r.flag("mismatch:item_type", "%s %s disagrees with the subject's item type %s; the subject wins", HeaderItemType, short(hdrType), short(r.ItemType))
		}
	case strings.TrimSpace(hdrType) != "":
		r.ItemType = hdrType
		r.flag("missing:item_type", "subject %s has no item type; taken from %s", short(r.Subject), HeaderItemType)
		r.checkItemType(HeaderItemType, hdrType)
	case len(h[HeaderItemType]) > 0:
		// Sent blank: nothing to keep as the item type (the raw headers
		// keep what came).
		r.ItemType = "unknown"
		r.flag("missing:item_type", "subject %s has no item type and %s is blank", short(r.Subject), HeaderItemType)
		r.checkItemType(HeaderItemType, hdrType)
	default:
		r.ItemType = "unknown"
		r.flag("missing:item_type", "subject %s has no item type and %s is missing", short(r.Subject), HeaderItemType)
	}
	r.ItemType = r.bounded("item_type", r.ItemType, MaxItemTypeBytes)
	r.Tenant = r.bounded("tenant", tenant, MaxTenantBytes)
	if r.Tenant == "" {
		if subjTenant == "" { // else tenantToken said why
			r.flag("missing:tenant", "subject %s does not start with %q followed by a tenant", short(r.Subject), prefix+".")
		}
		r.Tenant = UnknownTenant
	}

	r.applyContract(h)
	r.readProducerWord(h)
	r.checkErrorClasses(classes)
	r.ReplayOf = r.replayOf(h)
	r.flagConflicting(conflicts)
	if r.OriginalSubject == "" {
		r.flag("missing:original_subject", "%s is missing: the message cannot be replayed", HeaderOriginalSubject)
	}
	if r.MsgID == "" {
		r.MsgID, r.MsgIDDerived = r.derivedMsgID(), true
	}
	r.checkBounds()
	r.checkPlausible()
	r.Fingerprint = Fingerprint(r.ErrorClass, r.Error, r.Stack)
	return r
}

// UnknownTenant is the tenant of a dead letter that names none the console
// can place it in: no tenant token, a token that cannot be one
// (tenantToken), an advisory whose original is gone or whose subject its
// watched stream's template does not map.
const UnknownTenant = "unknown"

// tenantToken returns the tenant a subject's tenant token names, or ""
// when it cannot name one, flagged invalid:tenant with the token escaped:
// a token that is not valid UTF-8 or holds NUL or U+FFFD (stored text
// replaces bad bytes with U+FFFD, so acme\xff, acme\xfe and a literal
// acme\uFFFD would share one console tenant, and whoever may publish to
// one would write into the others), or a wildcard (* is the console's
// "every tenant", > is no tenant either), or a partial one ("acme*", which
// no role can name), a token that reads as the key a longer tenant's name
// is stored as (quarantine.BoundedKey: whoever may publish to it would
// write into that tenant), or UnknownTenant itself (the console's tenant
// for dead letters of no tenant, which holds other tenants' unmapped
// give-ups). Such a dead letter is stored under UnknownTenant, its subject
// kept as it came. An empty token is
// returned as "" unflagged (missing:tenant).
func (r *Record) tenantToken(tok string) string {
	switch {
	case tok == "":
		return ""
	case tok == "*" || tok == ">":
		r.flag("invalid:tenant", "the subject's tenant token %s is a wildcard, which names no tenant: stored under tenant %q", short(tok), UnknownTenant)
		return ""
	case !utf8.ValidString(tok) || strings.ContainsRune(tok, 0) || strings.ContainsRune(tok, utf8.RuneError):
		r.flag("invalid:tenant", "the subject's tenant token %s is not valid UTF-8 text (or holds NUL or U+FFFD), which could not be told apart from "+
			"another tenant's once stored: stored under tenant %q", short(tok), UnknownTenant)
		return ""
	case strings.ContainsAny(tok, "*>"):
		r.flag("invalid:tenant", "the subject's tenant token %s holds a wildcard character, which no role can name: stored under tenant %q",
			short(tok), UnknownTenant)
		return ""
	case len(tok) <= MaxTenantBytes && quarantine.IsBoundedKey(tok):
		r.flag("invalid:tenant", "the subject's tenant token %s reads as the key the console stores a longer tenant's name as, "+
			"so its dead letters would be that tenant's: stored under tenant %q", short(tok), UnknownTenant)
		return ""
	case tok == UnknownTenant:
		r.flag("invalid:tenant", "the subject's tenant token is %q, the console's own tenant for dead letters of no tenant", UnknownTenant)
		return ""
	}
	return tok
}

// checkItemType flags invalid:item_type when itemType, taken from what
// (the subject's item type, the tokens after the tenant, or
// Dlq-Item-Type), names no item type (itemTypeFault); it is kept as it
// came either way.
func (r *Record) checkItemType(what, itemType string) {
	if fault := itemTypeFault(itemType); fault != "" {
		r.flag("invalid:item_type", "%s %s %s, which names no item type", what, short(itemType), fault)
	}
}

// itemTypeFault says why itemType names no item type, or "" when it names
// one: an item type is tokens joined by dots, as a subject's are, none
// empty, none a wildcard (* or >) and none holding white space. It is the
// one rule for an item type however it came, so that Dlq-Item-Type
// cannot file a dead letter under an item type its subject could not.
func itemTypeFault(itemType string) string {
	if strings.TrimSpace(itemType) == "" {
		return "is blank"
	}
	for _, tok := range strings.Split(itemType, ".") {
		switch {
		case tok == "":
			return "has an empty token"
		case tok == "*" || tok == ">":
			return fmt.Sprintf("holds the wildcard token %q", tok)
		case strings.IndexFunc(tok, unicode.IsSpace) >= 0:
			return "holds white space"
		}
	}
	return ""
}

// headerView returns the headers to read: the exact block when the ingester
// read it from the stream (leniently parsed, each problem flagged), else
// what the NATS client read. delivered says the message came through a
// consumer, so a block read from the stream is one the client could not read.
func (r *Record) headerView(m Received, delivered bool) map[string][]string {
	switch {
	case m.HeaderBlock != nil:
		if len(m.HeaderBlock) == 0 {
			return nil // the message had no header block
		}
		r.HeaderBlock = m.HeaderBlock
		if delivered && m.Header == nil {
			r.flag("header_block_unparsed", "the NATS client could not read the header block (%d bytes); it was read again from the stream, kept byte for byte and read leniently",
				len(m.HeaderBlock))
		}
		h, problems := ParseHeaderBlock(m.HeaderBlock)
		for _, p := range problems {
			r.flag("header_line_skipped", "header block: %s", p)
		}
		return h
	case m.HeaderBlockErr != nil && m.Header != nil:
		r.flag("header_block_unavailable", "the NATS client read the header block only in part and reading it again from the stream failed: %v; the headers it read are kept", m.HeaderBlockErr)
	case m.HeaderBlockErr != nil:
		r.flag("header_block_unavailable", "the NATS client could not read the header block and reading it again from the stream failed: %v; headers are missing", m.HeaderBlockErr)
	}
	return m.Header
}

// payloadUnverified flags a record made from a delivery that may have come
// without its payload and could not be read whole from the stream
// (Received.PayloadErr): what was delivered is kept, and the payload is
// unavailable (a replay must not send an empty payload under the
// original's identity), unless the size the delivery stated is 0 (the
// payload is empty then, whoever wrote the header). The stated size is the
// last Nats-Msg-Size: the server adds its own after any the producer set.
// A stated 0 is trusted only when it can be the server's: the NATS client
// read the header block whole, and no other header name or value holds
// Nats-Msg-Size. The server writes its line in place of the block's last
// two bytes; a producer's block that does not end in CR LF has that line
// run into its last header (mayLackPayload), and the only Nats-Msg-Size
// the client reads is then the producer's, which says nothing.
func (r *Record) payloadUnverified(m Received) {
	stated, empty := "(none the NATS client could read)", false
	if vs := m.Header[msgSizeHeader]; len(vs) > 0 {
		v := vs[len(vs)-1]
		stated = short(v)
		if n, err := strconv.ParseUint(v, 10, 64); err == nil {
			stated, empty = strconv.FormatUint(n, 10), n == 0
		}
	}
	runIn := sizeRunIn(m.Header)
	partly := m.HeaderBlock != nil || m.HeaderBlockErr != nil
	trusted := empty && !runIn && !partly
	r.PayloadUnavailable = !trusted
	what := "its payload, if it had one, is not here, and it is not replayed (a producer that sets Nats-Msg-Size itself on an empty payload looks the same)"
	switch {
	case trusted:
		what = "the stated size is 0, so the payload is empty either way; its headers may hold the server's Nats-Msg-Size"
	case empty && runIn:
		what = "the stated size is 0, but another header holds Nats-Msg-Size (the server's line run into a producer's header that did not end in CR LF): " +
			"the 0 may be the producer's, so its payload, if it had one, is not here, and it is not replayed"
	case empty:
		what = "the stated size is 0, but the NATS client did not read the header block whole: the 0 may be the producer's, " +
			"so its payload, if it had one, is not here, and it is not replayed"
	}
	r.flag("payload_unverified", "the delivery came with %s %s and no payload, as a consumer made headers only delivers a message (the payload stays in the stream), "+
		"and the stream's copy could not be read: %v. Stored as delivered: %s", msgSizeHeader, stated, m.PayloadErr, what)
}

// sizeRunIn reports whether a header other than Nats-Msg-Size holds
// Nats-Msg-Size in its name or a value.
func sizeRunIn(h map[string][]string) bool {
	for k, vs := range h {
		if k == msgSizeHeader {
			continue
		}
		if strings.Contains(k, msgSizeHeader) || slices.ContainsFunc(vs, func(v string) bool { return strings.Contains(v, msgSizeHeader) }) {
			return true
		}
	}
	return false
}

// derivedMsgID is the identity of a dead letter whose producer gave none:
// where and when the message was stored (DerivedMsgID); without a stream
// sequence (metadata_unreadable), its source key.
func (r *Record) derivedMsgID() string {
	if r.SourceSeq == 0 {
		return fmt.Sprintf("%s:%s", r.SourceStream, hex.EncodeToString(r.SourceKey[:8]))
	}
	return DerivedMsgID(r.SourceStream, r.SourceSeq, r.idTime)
}

// DerivedMsgID is the message id the console gives a message whose
// producer gave none: <stream>:<sequence>@<stored time>, the time the
// stream stored it in RFC 3339 UTC with nanoseconds, e.g.
// DLQ:42@2026-11-29T09:00:00.123456789Z. The sequence alone restarts at 1
// when a stream is deleted and made again, and a replay publishes under
// this id and the replay ledger keys on it: a new message must never take
// an old one's id (it would be reported as already replayed, or dropped by
// the target stream's duplicate window). A redelivery of the same stream
// message carries the same stored time, so it gets the same id.
func DerivedMsgID(stream string, seq uint64, stored time.Time) string {
	return fmt.Sprintf("%s:%d@%s", stream, seq, stored.UTC().Format(time.RFC3339Nano))
}

// contractByLower is each header name the contract reads, by its lower
// case (lowerASCII).
var contractByLower = func() map[string]string {
	m := map[string]string{}
	for name := range contractFields {
		if name != HeaderNatsMsgID { // JetStream's, and JetStream reads it only as spelled
			m[lowerASCII(name)] = name
		}
	}
	for _, name := range []string{HeaderReplayOf, UpstreamPrefix + HeaderReplayOf} {
		m[lowerASCII(name)] = name
	}
	return m
}()

// contractView returns the headers to read the contract from. Header names
// are case-sensitive in NATS, and some clients and gateways send them in
// lower case (dlq-original-subject): a contract header sent under another
// case is read as the contract's name and flagged header_name_case:<field>
// (the stored headers keep every name as sent). A header spelled as the
// contract spells it wins over another spelling; another spelling with
// other values is flagged duplicate:<field>, as the header sent twice
// under one spelling is (and, for an identity header, conflicting:<field>:
// conflictsSent reads every spelling before this view). Several other
// spellings are read in the order of their names. spellings is
// otherSpellings(h). h itself is returned when there is nothing to read
// otherwise.
func (r *Record) contractView(h map[string][]string, spellings map[string][]string) map[string][]string {
	var others map[string][]string    // by contract name: the other spellings sent
	var conflicts map[string][]string // by contract name: other spellings that say otherwise
	for name, sent := range spellings {
		exact, ok := h[name]
		if !ok {
			if others == nil {
				others = map[string][]string{}
			}
			others[name] = sent
			continue
		}
		for _, k := range sent {
			if !slices.Equal(exact, h[k]) {
				if conflicts == nil {
					conflicts = map[string][]string{}
				}
				conflicts[name] = append(conflicts[name], k)
			}
		}
	}
	r.flagConflicts(conflicts)
	if others == nil {
		return h
	}
	view := make(map[string][]string, len(h)+len(others))
	for k, vs := range h {
		view[k] = vs
	}
	for _, name := range slices.Sorted(maps.Keys(others)) {
		sent := others[name]
		sort.Strings(sent)
		var vs []string
		for _, k := range sent {
			vs = append(vs, h[k]...)
		}
		view[name] = vs
		r.flag("header_name_case:"+fieldOf(name), "%s sent as %s, read all the same: header names are case-sensitive, spell it as the contract does",
			name, short(strings.Join(sent, ", ")))
	}
	return view
}

// otherSpellings returns, by the contract's name, the names of h that
// spell a header the contract reads otherwise (in another ASCII case),
// each list in the order of the names; nil when there is none. It is read
// once per message, by conflictsSent and contractView, and copies no
// name that is not one the contract reads.
func otherSpellings(h map[string][]string) map[string][]string {
	var out map[string][]string
	for k := range h {
		if !hasFoldPrefix(k, "dlq-") && !hasFoldPrefix(k, "upstream-dlq-") {
			continue // not one the contract reads (checked without a copy of the name)
		}
		if _, exact := contractFields[k]; exact || k == HeaderReplayOf || k == UpstreamPrefix+HeaderReplayOf {
			continue // spelled as the contract does
		}
		if name, ok := contractByLower[lowerASCII(k)]; ok && name != k {
			if out == nil {
				out = map[string][]string{}
			}
			out[name] = append(out[name], k)
		}
	}
	for _, names := range out {
		sort.Strings(names)
	}
	return out
}

// flagConflicts flags duplicate:<field> for each contract header sent
// under another case with other values than under the contract's
// spelling (conflicts: the other spellings, by contract name), once per
// header: the contract's spelling is read, the others are kept among the
// headers. For an identity header (identityHeaders) the values are also
// flagged conflicting:<field> (flagConflicting), which blocks a replay.
func (r *Record) flagConflicts(conflicts map[string][]string) {
	for _, name := range slices.Sorted(maps.Keys(conflicts)) {
		sent := conflicts[name]
		sort.Strings(sent)
		r.flag("duplicate:"+fieldOf(name), "%s sent also as %s with another value; the value under the contract's spelling is used",
			name, short(strings.Join(sent, ", ")))
	}
}

// hasFoldPrefix reports whether s starts with prefix, ignoring ASCII case
// (equalFoldASCII).
func hasFoldPrefix(s, prefix string) bool {
	return len(s) >= len(prefix) && equalFoldASCII(s[:len(prefix)], prefix)
}

// equalFoldASCII reports whether a and b are equal but for the case of
// ASCII letters. The contract's names are ASCII, and "another case" of
// one is another ASCII case: Unicode folding (strings.EqualFold,
// strings.ToLower) reads İ (U+0130) as i, the Kelvin sign as k and ſ as
// s, so Dlq-Prİncipal was read as the principal, and Dlq-Stack spelled
// with a Kelvin sign as the stack: names no contract client sends (review
// round 42). The replay's forwarding and PostgreSQL (lower(… COLLATE "C"))
// fold ASCII alone too.
func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lower(a[i]) != lower(b[i]) {
			return false
		}
	}
	return true
}

// lowerASCII is s with its ASCII letters in lower case, and nothing else
// changed (equalFoldASCII).
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		b[i] = lower(c)
	}
	return string(b)
}

// contractFields names the field each contract header fills, for flag codes.
var contractFields = map[string]string{
	HeaderOriginalSubject: "original_subject", HeaderOriginalMsgID: "msg_id", HeaderOperationID: "operation_id",
	HeaderTenant: "tenant_header", HeaderItemType: "item_type_header", HeaderError: "error",
	HeaderErrorClass: "error_class", HeaderStack: "stack", HeaderAttempts: "attempts",
	HeaderFirstFailedAt: "first_failed_at", HeaderLastFailedAt: "last_failed_at", HeaderConsumer: "consumer",
	HeaderCorrelationID: "correlation_id", HeaderPrincipal: "principal", HeaderNatsMsgID: "msg_id",
	HeaderUnsendable: "unsendable_headers", HeaderCut: "cut", HeaderLeftOut: "left_out",
}

func fieldOf(header string) string {
	if f, ok := contractFields[header]; ok {
		return f
	}
	if header == HeaderReplayOf || header == UpstreamPrefix+HeaderReplayOf {
		return "replay_of" // the console's, not the producer's contract
	}
	return strings.ToLower(header)
}

// applyContract reads the Dlq-* headers that do not decide the tenant.
func (r *Record) applyContract(h map[string][]string) {
	r.OriginalSubject = r.header(h, HeaderOriginalSubject)
	if r.OriginalSubject != "" {
		if err := ValidatePublishSubject(r.OriginalSubject); err != nil && len(r.OriginalSubject) <= MaxSubjectBytes {
			r.flag("invalid:original_subject", "%s %s: %v", HeaderOriginalSubject, short(r.OriginalSubject), err)
		}
	}
	r.MsgID = r.header(h, HeaderOriginalMsgID)
	r.OperationID = r.header(h, HeaderOperationID)
	r.CorrelationID = r.header(h, HeaderCorrelationID)
	r.Principal = r.header(h, HeaderPrincipal)
	r.Consumer = r.header(h, HeaderConsumer)
	r.Error = r.lines(h, HeaderError)
	r.Stack = r.lines(h, HeaderStack)

	r.ErrorClass = ClassUnclassified
	if c := r.header(h, HeaderErrorClass); c != "" {
		switch read, ok := readErrorClass(c); {
		case ErrorClass(c).Valid(), ErrorClass(c) == ClassUnclassified: // the producer saying it does not know, spelt as the contract does
			r.ErrorClass = ErrorClass(c)
		case ok:
			r.ErrorClass = read
			r.flag("spelling:error_class", "%s %s read as %s: spell it as the contract does", HeaderErrorClass, short(c), read)
		default:
			// Stored as unclassified, and judged by the rules as
			// unreadable (UnreadableErrorClass): the class it meant may
			// be one that is never replayed, never blindly.
			r.flag(FlagUnreadableErrorClass, "%s %s is not one of %s; the replay rules judge it as %s", HeaderErrorClass, short(c), classList(), ClassUnreadable)
		}
	}
	if a := r.header(h, HeaderAttempts); a != "" {
		r.Attempts = r.attempts(a)
	}
	r.FirstFailedAt = r.timeHeader(h, HeaderFirstFailedAt)
	r.LastFailedAt = r.timeHeader(h, HeaderLastFailedAt)
}

// errorClassesSent returns every value of Dlq-Error-Class sent under
// every spelling of its name (header names are case-sensitive in NATS,
// and contractView reads one spelling of them), for checkErrorClasses:
// the contract's spelling first, then the others in the order of their
// names, as contractView reads them.
func errorClassesSent(h map[string][]string) []string {
	var names []string
	for k := range h {
		if equalFoldASCII(k, HeaderErrorClass) && k != HeaderErrorClass {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	sent := slices.Clone(h[HeaderErrorClass])
	for _, k := range names {
		sent = append(sent, h[k]...)
	}
	return sent
}

// checkErrorClasses makes a dead letter whose Dlq-Error-Class values
// (sent, every value under every spelling) name different classes once
// read as applyContract reads one (in any spelling: readErrorClass) one
// whose class could not be read: stored as unclassified, flagged
// FlagUnreadableErrorClass with the classes it said, and so judged by
// the replay rules as unreadable (UnreadableErrorClass). applyContract
// reads the first value, or the contract's spelling, which a framework's
// default "transient" added before the service's own "stale_version", or
// a gateway's copy in another case, would decide: the class the consumer
// meant is not known, and may be one never replayed. The same class sent
// again, in any spelling, is read as it is (flagged duplicate:error_class
// only).
func (r *Record) checkErrorClasses(sent []string) {
	if len(sent) < 2 {
		return
	}
	const named = 4 // a producer may send thousands: the sentence names a few
	classes := newDistinct(named)
	for _, v := range sent {
		c, ok := ErrorClass(v), ErrorClass(v).Valid()
		if !ok {
			c, ok = readErrorClass(v)
		}
		name := string(c)
		if !ok {
			name = short(v) // none in any spelling: as sent, quoted and cut
		}
		classes.add(name)
	}
	if classes.count() < 2 {
		return
	}
	said := classes.first
	if more := classes.count() - len(said); more > 0 {
		said = append(said, fmt.Sprintf("%d more", more))
	}
	r.ErrorClass = ClassUnclassified
	r.flag(FlagUnreadableErrorClass, "%s says %s, which disagree: the class the consumer meant is not known, so none of them is used; "+
		"stored as %s, the replay rules judge it as %s", HeaderErrorClass, strings.Join(said, " and "), ClassUnclassified, ClassUnreadable)
}

// replayOf reads the id of the dead letter a replayed message came from:
// Dlq-Replay-Of as the console sent it, or as the producer helper renames
// it (Upstream-Dlq-Replay-Of). It is a claim until Store.Insert checks it.
func (r *Record) replayOf(h map[string][]string) int64 {
	name := HeaderReplayOf
	if len(h[name]) == 0 {
		name = UpstreamPrefix + HeaderReplayOf
	}
	v := r.header(h, name)
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 1 {
		r.flag("invalid:replay_of", "%s %s is not the id of a dead letter: not linked", name, short(v))
		return 0
	}
	return n
}

func (r *Record) setPayload(data []byte) {
	if data == nil {
		data = []byte{}
	}
	r.Payload = data
	r.PayloadSHA256 = sha256.Sum256(data)
}

// header returns the first value of a contract header as clean text,
// flagging duplicate:<field> when it was sent more than once. Values of an
// identity header that disagree are flagged conflicting:<field> too
// (flagConflicting, from what ParseDLQ took before contractView): the
// first is still the one returned and stored, and the replay rules block
// the dead letter for a person.
func (r *Record) header(h map[string][]string, name string) string {
	vs := h[name]
	if len(vs) == 0 {
		return ""
	}
	if len(vs) > 1 {
		r.flag("duplicate:"+fieldOf(name), "%s sent %d times; the first value is used", name, len(vs))
	}
	return r.text(fieldOf(name), name, vs[0])
}

// lines returns a multi-line header. NATS header values cannot hold line
// breaks and lose leading white space, so Dlq-Error and Dlq-Stack are sent
// escaped (\n, \r, \t, \\); several values are taken as several lines.
func (r *Record) lines(h map[string][]string, name string) string {
	vs := h[name]
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = r.text(fieldOf(name), name, UnescapeLines(v))
	}
	return strings.Join(out, "\n")
}

var (
	lineEscaper   = strings.NewReplacer("\\", "\\\\", "\n", "\\n", "\r", "\\r", "\t", "\\t")
	lineUnescaper = strings.NewReplacer("\\\\", "\\", "\\n", "\n", "\\r", "\r", "\\t", "\t")
)

// EscapeLines writes text for a Dlq-Error or Dlq-Stack header value.
func EscapeLines(s string) string { return lineEscaper.Replace(s) }

// UnescapeLines reverses EscapeLines; other backslashes are kept.
func UnescapeLines(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s // nothing escaped: the replacer would only scan it
	}
	return lineUnescaper.Replace(s)
}

func (r *Record) timeHeader(h map[string][]string, name string) *time.Time {
	v := r.header(h, name)
	if v == "" {
		return nil
	}
	t, err := parseRFC3339(strings.TrimSpace(v))
	if err != nil {
		r.flag("invalid:"+fieldOf(name), "%s %s is not an RFC 3339 time", name, short(v))
		return nil
	}
	t = t.UTC()
	return &t
}

// parseRFC3339 reads s as an RFC 3339 time in each spelling section 5.6
// allows that Go's time.RFC3339Nano refuses: a lowercase t and z, a space
// for the T (as section 5.6's note allows, and Python's and many
// loggers' ISO formats write it), and a leap second (:60, read as the
// second after :59). Before, such times were stored as none and flagged
// "not an RFC 3339 time" (review round 44).
func parseRFC3339(s string) (time.Time, error) {
	if len(s) > 19 && (s[10] == 't' || s[10] == ' ') {
		s = s[:10] + "T" + s[11:]
	}
	if strings.HasSuffix(s, "z") {
		s = s[:len(s)-1] + "Z"
	}
	leap := len(s) > 19 && s[10] == 'T' && s[16] == ':' && s[17:19] == "60"
	if leap {
		s = s[:17] + "59" + s[19:]
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err == nil && leap {
		t = t.Add(time.Second)
	}
	return t, err
}

// text makes s storable as PostgreSQL text: invalid UTF-8 and NUL become
// U+FFFD, flagged not_utf8:<field>. The exact bytes stay in the headers (or
// the header block).
func (r *Record) text(field, what, s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	r.flag("not_utf8:"+field, "%s is not valid UTF-8 text; shown with replacement characters, kept exactly in the raw headers", what)
	return CleanText(s)
}

// CleanText returns s with each byte that is not part of valid UTF-8, and
// each NUL, replaced by U+FFFD: one replacement per byte, as JetStream's
// JSON API (Go's encoding/json) writes such bytes, so a run of bad bytes
// keeps its length and a text read back through that API compares equal.
func CleanText(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == 0 || (c == utf8.RuneError && size == 1) {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// encodeHeaders keeps every header value, sorted by name, values in order.
func encodeHeaders(h map[string][]string) []HeaderValue {
	names := make([]string, 0, len(h))
	for n := range h {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]HeaderValue, 0, len(h))
	for _, n := range names {
		name, nameEnc := encodeText(n)
		for _, v := range h[n] {
			value, enc := encodeText(v)
			out = append(out, HeaderValue{Name: name, NameEncoding: nameEnc, Value: value, Encoding: enc})
		}
	}
	return out
}

func encodeText(s string) (string, string) {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s, ""
	}
	return base64.StdEncoding.EncodeToString([]byte(s)), "base64"
}

// DecodeHeaders turns stored headers back into the exact values received.
func DecodeHeaders(hs []HeaderValue) (map[string][]string, error) {
	out := make(map[string][]string, len(hs))
	for _, h := range hs {
		name, err := decodeText(h.Name, h.NameEncoding)
		if err != nil {
			return nil, fmt.Errorf("header name %q: %w", h.Name, err)
		}
		value, err := h.DecodedValue()
		if err != nil {
			return nil, fmt.Errorf("header %q: %w", name, err)
		}
		out[name] = append(out[name], value)
	}
	return out, nil
}

// DecodedValue is h's value exactly as received (decoded when it was
// stored encoded).
func (h HeaderValue) DecodedValue() (string, error) { return decodeText(h.Value, h.Encoding) }

func decodeText(s, enc string) (string, error) {
	switch enc {
	case "":
		return s, nil
	case "base64":
		b, err := base64.StdEncoding.DecodeString(s)
		return string(b), err
	default:
		return "", fmt.Errorf("unknown encoding %q", enc)
	}
}

// splitDLQSubject splits <prefix>.<tenant>.<item_type...>.
func splitDLQSubject(prefix, subject string) (tenant, itemType string) {
	rest, ok := strings.CutPrefix(subject, prefix+".")
	if !ok {
		return "", ""
	}
	tenant, itemType, _ = strings.Cut(rest, ".")
	return tenant, itemType
}

// ValidatePublishSubject reports why s cannot be published to, or nil.
func ValidatePublishSubject(s string) error {
	if s == "" {
		return fmt.Errorf("empty subject")
	}
	if len(s) > MaxSubjectBytes {
		return fmt.Errorf("subject is %d bytes, over the %d a replay publishes to", len(s), MaxSubjectBytes)
	}
	if strings.ContainsAny(s, " \t\r\n") {
		return fmt.Errorf("subject contains white space")
	}
	for _, tok := range strings.Split(s, ".") {
		switch tok {
		case "":
			return fmt.Errorf("subject has an empty token")
		case "*", ">":
			return fmt.Errorf("subject has a wildcard")
		}
	}
	return nil
}

func classList() string {
	s := make([]string, len(ProducerClasses))
	for i, c := range ProducerClasses {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}
