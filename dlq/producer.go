package dlq

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// Failure says why a consumer gave up on a message. Err is required; the
// rest is optional and is sent in the Dlq-* headers.
type Failure struct {
	Err           error
	Class         ErrorClass // one of ProducerClasses; empty sends none
	Attempts      int        // 0: taken from the JetStream delivery count when known
	Stack         string
	FirstFailedAt time.Time
	LastFailedAt  time.Time // zero: now
	Consumer      string
	OperationID   string // empty: none is sent (an upstream Dlq-Operation-Id is not taken over)
	CorrelationID string
	Principal     string
}

// Origin is where the original message lived in JetStream. The zero value
// means it did not come from a stream.
type Origin struct {
	Stream string
	Seq    uint64
	Time   time.Time // when the stream stored it; zero: not known (the derived id is then the position alone: see NewMessage)
}

// msgID is the message id of the original when it carried none: where it
// lived and, when known, when it was stored there (DerivedMsgID), so that
// a stream deleted and made again, which numbers from 1 again, does not
// give a new message an old one's id.
func (o Origin) msgID() string {
	if o.Time.IsZero() {
		return fmt.Sprintf("%s:%d", o.Stream, o.Seq)
	}
	return DerivedMsgID(o.Stream, o.Seq, o.Time)
}

// UpstreamPrefix is put before the name of every Dlq-* header the original
// message carried: NewMessage keeps them, but never as the contract's
// headers (an upstream client must not choose the Dlq-Principal that a
// revalidate replay re-checks, nor the class or operation id).
const UpstreamPrefix = "Upstream-"

// NewMessage builds the dead letter for orig, to be published on
// <prefix>.<tenant>.<itemType>. The Dlq-* headers come only from what the
// service passes (tenant, item type, f) and from where the original lived:
// every Dlq-* header orig carried (any case) is kept renamed with
// UpstreamPrefix, every Nats-* header is dropped, and every other header is
// kept as it was, but for those whose names NATS clients refuse to
// publish (replaypolicy.SendableHeaderName: a raw client may send
// "X Trace"), which go in HeaderUnsendable: copied as they were, they
// made every publish fail. The original Nats-Msg-Id goes into
// Dlq-Original-Msg-Id; when there was none, the id becomes
// "<stream>:<seq>@<stored time>" of where and when the original lived
// (Origin.msgID), so a replay is never published under a fresh identity.
// Give Origin.Time (Publish takes it from the JetStream metadata): without
// it the id is "<stream>:<seq>" alone, which a stream deleted and made
// again gives to another message, and which never matches the id the
// console derives for the same original's advisory.
// The message carries its own Nats-Msg-Id (deadLetterID), so publishing the same dead
// letter twice stores it once, while two messages that share an id, or a
// replayed message that fails again, are dead letters of their own. Name
// the consumer that gave up (Failure.Consumer; Publish reads it from the
// delivery): it is part of that id, and two consumers giving up on one
// message without it would share one.
//
// The error and the stack trace are cut to budgets (errorBudget,
// stackBudget), and the message is made to fit the header block JetStream
// stores (fit, which says what it cut or left out in HeaderCut and
// HeaderLeftOut); Publish fits it to the server's max_payload too.
func NewMessage(prefix, tenant, itemType string, orig *nats.Msg, from Origin, f Failure) (*nats.Msg, error) {
	return newDeadLetter(prefix, tenant, itemType, orig, from, f, 0, nil)
}

// newDeadLetter is NewMessage for a server whose max_payload is
// maxPayload (0: not known), with leftOut, the parts of the original
// Publish could not get (HeaderLeftOut values), said so.
func newDeadLetter(prefix, tenant, itemType string, orig *nats.Msg, from Origin, f Failure, maxPayload int64, leftOut []string) (*nats.Msg, error) {
	if f.Err == nil {
		return nil, fmt.Errorf("dead-letter %s: Failure.Err is required", orig.Subject)
	}
	if tenant == "" || strings.ContainsAny(tenant, ".*> ") || strings.IndexFunc(tenant, unicode.IsSpace) >= 0 ||
		!utf8.ValidString(tenant) || strings.ContainsRune(tenant, 0) || strings.ContainsRune(tenant, utf8.RuneError) {
		// As the console reads a tenant (Record.tenantToken): one it
		// stores under "unknown" is refused here, where it can be fixed.
		return nil, fmt.Errorf("dead-letter %s: tenant %q must be one subject token of UTF-8 text, without white space, NUL or U+FFFD", orig.Subject, tenant)
	}
	if tenant == UnknownTenant || len(tenant) <= MaxTenantBytes && quarantine.IsBoundedKey(tenant) {
		return nil, fmt.Errorf("dead-letter %s: tenant %q is one the console keeps for itself (its tenant of dead letters of no tenant, or the key it stores a longer tenant's name as)",
			orig.Subject, tenant)
	}
	if fault := itemTypeFault(itemType); fault != "" {
		return nil, fmt.Errorf("dead-letter %s: item type %q %s, which names no item type", orig.Subject, itemType, fault)
	}
	if f.Class != "" && !f.Class.Valid() && f.Class != ClassUnclassified {
		// The classes the console assigns itself (terminated,
		// max_deliveries, unreadable) are not a producer's to send: the
		// console would flag the dead letter and judge it unreadable.
		return nil, fmt.Errorf("dead-letter %s: error class %q is not one a producer sends (%s, or %s)", orig.Subject, f.Class, classList(), ClassUnclassified)
	}
	subject := prefix + "." + tenant + "." + itemType
	if err := ValidatePublishSubject(subject); err != nil {
		return nil, fmt.Errorf("dead-letter subject %q: %w", subject, err)
	}
	h := nats.Header{}
	unsendable := map[string][]string{}
	for k, vs := range orig.Header {
		lower := strings.ToLower(k)
		switch {
		case strings.HasPrefix(lower, "nats-"):
			continue
		case strings.HasPrefix(lower, "dlq-"):
			k = UpstreamPrefix + k
		}
		if !replaypolicy.SendableHeaderName(k) {
			unsendable[k] = append(unsendable[k], vs...)
			continue
		}
		h[k] = append(h[k], vs...)
	}
	altered := alteredOnSend(h) // the original's own, before the dead letter's are set
	if len(unsendable) > 0 {
		h.Set(HeaderUnsendable, base64.StdEncoding.EncodeToString(EncodeHeaderBlock(encodeHeaders(unsendable))))
	}
	msgID := orig.Header.Get(HeaderNatsMsgID)
	if msgID == "" && from.Stream != "" {
		msgID = from.msgID()
	}
	set := func(k, v string) {
		if v != "" {
			h.Set(k, v)
		}
	}
	set(HeaderOriginalSubject, orig.Subject)
	set(HeaderOriginalMsgID, msgID)
	set(HeaderTenant, tenant)
	set(HeaderItemType, itemType)
	set(HeaderErrorClass, string(f.Class))
	if f.Attempts > 0 {
		set(HeaderAttempts, strconv.Itoa(f.Attempts))
	}
	if !f.FirstFailedAt.IsZero() {
		set(HeaderFirstFailedAt, f.FirstFailedAt.UTC().Format(time.RFC3339Nano))
	}
	last := f.LastFailedAt
	if last.IsZero() {
		last = time.Now()
	}
	set(HeaderLastFailedAt, last.UTC().Format(time.RFC3339Nano))
	set(HeaderConsumer, f.Consumer)
	set(HeaderOperationID, f.OperationID)
	set(HeaderCorrelationID, f.CorrelationID)
	set(HeaderPrincipal, f.Principal)
	if msgID != "" {
		h.Set(HeaderNatsMsgID, deadLetterID(f.Consumer, msgID, orig, from))
	}
	for _, v := range leftOut {
		h.Add(HeaderLeftOut, v)
	}
	if v := sentOtherwise(altered, map[string]string{HeaderOriginalMsgID: msgID, HeaderOperationID: f.OperationID, HeaderPrincipal: f.Principal}, from); v != "" {
		h.Add(HeaderLeftOut, v)
	}
	m := &nats.Msg{Subject: subject, Header: h, Data: orig.Data}
	texts := failureTexts{errorText: f.Err.Error(), stack: f.Stack}
	texts.set(h, errorBudget, stackBudget)
	if err := fit(m, texts, maxPayload, from); err != nil {
		return nil, fmt.Errorf("dead-letter %s: %w", orig.Subject, err)
	}
	return m, nil
}

// sentOtherwise says, as a HeaderLeftOut value ("header_value"), which
// values a NATS client does not send as they are: every client trims a
// value's leading and trailing blanks and turns CR and LF into spaces
// (nats.go's writeHeaderValue), while a raw client could publish the
// original with them. altered are the original's headers that hold such a
// value (alteredOnSend); own are the values the dead letter's identity and
// authority are read from (the original's message id, the operation id,
// the principal), by the header they go in. The dead letter then holds
// another id or value than the original had, and a replay under it would
// not be the original (its downstream dedupe would not know it): the
// console never replays it. The failure's other words (consumer,
// correlation id) are not sent on a replay, or read trimmed alike, and do
// not count. "" when every value goes as it is.
func sentOtherwise(altered []string, own map[string]string, from Origin) string {
	names := slices.Clone(altered)
	for k, v := range own {
		if valueAlteredOnSend(v) {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	shown := names[:min(len(names), 10)]
	for i, n := range shown {
		shown[i] = cutText(n, 64)
	}
	list := strings.Join(shown, ", ")
	if more := len(names) - len(shown); more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	return fmt.Sprintf("header_value: NATS clients trim a header value's leading and trailing blanks and turn CR and LF into spaces, "+
		"so the values of %s are not sent as the original had them; %s", list, originWhere(from))
}

// alteredOnSend returns the names of h that hold a value a NATS client
// would send otherwise than it is (valueAlteredOnSend).
func alteredOnSend(h nats.Header) []string {
	var names []string
	for k, vs := range h {
		if strings.HasPrefix(strings.ToLower(k), strings.ToLower(UpstreamPrefix)+"dlq-") {
			// An earlier hop's bookkeeping (renamed from Dlq-*): a
			// replay never sends it (replay.Sent), so how a client
			// sends it does not count.
			continue
		}
		if slices.ContainsFunc(vs, valueAlteredOnSend) {
			names = append(names, k)
		}
	}
	return names
}

// valueAlteredOnSend reports whether a NATS client would send the header
// value v otherwise than it is (sentOtherwise).
func valueAlteredOnSend(v string) bool {
	return textproto.TrimString(v) != v || strings.ContainsAny(v, "\r\n")
}

// deadLetterID is the Nats-Msg-Id of the dead letter of orig: the DLQ
// stream stores a dead letter published twice (a retry after a lost
// PubAck, the original delivered again after its dead letter was
// published) once, and never takes another message for a repeat. A
// message id names the message only as far as its producer and its
// stream's duplicate window go: two messages stored under one id (minutes
// apart, or in two streams) are two dead letters. So the id also names
// where the original lived (stream and sequence), or, when it did not come
// from a stream, what it was (coreSum: its subject, headers and payload;
// with the payload alone, two messages of one id on two subjects, or with
// two header blocks and no payload, as binary CloudEvents are, shared one
// id, and the DLQ stream dropped the second). A replayed message keeps
// the original id; when it fails again it is another dead letter, so the
// replay that sent it is part of the id too. The same failure dead-lettered
// again (the same message, consumer and replay) has the same id.
func deadLetterID(consumer, msgID string, orig *nats.Msg, from Origin) string {
	id := "dlq:" + consumer + ":" + msgID
	switch at := fmt.Sprintf("%s:%d", from.Stream, from.Seq); {
	case from.Stream == "":
		sum := coreSum(orig)
		id += ":sha256:" + hex.EncodeToString(sum[:12])
	case msgID != at && !strings.HasPrefix(msgID, at+"@"): // else the id names the position already
		id += ":" + at
	}
	if r := orig.Header.Get(HeaderReplayRequest); r != "" {
		id += ":replay:" + r + ":" + orig.Header.Get(HeaderReplayOf)
	}
	if len(id) > maxDeadLetterID { // it would take the header block's room a second time, beside Dlq-Original-Msg-Id
		sum := sha256.Sum256([]byte(id))
		id = "dlq:sha256:" + hex.EncodeToString(sum[:])
	}
	return id
}

// coreDomain starts what coreSum hashes, so that its sums are not taken
// for sums of anything else (an earlier helper hashed the payload alone).
const coreDomain = "quarantine-dead-letter-core-v1"

// coreSum is the SHA-256 of what names a message that did not come from a
// stream (deadLetterID): its subject, every header it carried (names
// sorted byte-wise, each name's values in their order) and its payload.
// Each field is written with its length before it (8 bytes, big-endian),
// and the headers with their count, so that no two messages write the
// same bytes (a name that ends where a value starts, say). The headers are
// the original's as received, Nats-* and Dlq-* ones too: they are part of
// what the message was, and the same message gives the same sum.
func coreSum(orig *nats.Msg) [sha256.Size]byte {
	h := sha256.New()
	field := func(b []byte) {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(b))))
		h.Write(b)
	}
	count := func(n int) { h.Write(binary.BigEndian.AppendUint64(nil, uint64(n))) }
	field([]byte(coreDomain))
	field([]byte(orig.Subject))
	names := slices.Sorted(maps.Keys(orig.Header))
	count(len(names))
	for _, k := range names {
		field([]byte(k))
		count(len(orig.Header[k]))
		for _, v := range orig.Header[k] {
			field([]byte(v))
		}
	}
	field(orig.Data)
	return [sha256.Size]byte(h.Sum(nil))
}

// maxDeadLetterID is the longest dead letter id deadLetterID gives as
// it is; a longer one (a message id or consumer of kilobytes) is given as
// its SHA-256, which names it as well.
const maxDeadLetterID = 1024

// Publish dead-letters a message received from JetStream in one call: it
// builds the dead letter (attempts default to the delivery count; the
// original read again from its stream when its delivery may not show it
// whole: wholeOriginal), fits it to the server's max_payload (fit), and
// publishes it to the DLQ stream, waiting for the PubAck. A PubAck that
// says "duplicate" for a message the stream kept that is not this dead
// letter (any producer may send one under a foreseen id, one of the same
// tenant with every header but its class or principal the same) is
// answered by publishing it again under another id; reading the kept
// message (keptIsThis) needs a DLQ stream that allows direct gets and the
// right to get the last message on the tenant's own DLQ subjects
// ($JS.API.DIRECT.GET.<stream>.<prefix>.<tenant>.>), without which it is
// published again too (a retry then stores it twice). Never give services
// $JS.API.STREAM.MSG.GET.<stream> for this: it reads every tenant's dead
// letters. The caller then acks the original, and never terminates it: on a
// stream the console watches (DLQ_WATCH_STREAMS) a terminated message
// raises MSG_TERMINATED, which the console captures as a dead letter of
// its own, a second record of the same failure under class terminated
// (the console blocks it from every replay, naming this one, but it is
// still counted and listed). On an error nothing was dead-lettered for
// certain: leave the original to be redelivered (nak it), so it is tried
// again or reaches MaxDeliver.
func Publish(ctx context.Context, js jetstream.JetStream, prefix, tenant, itemType string, orig jetstream.Msg, f Failure) error {
	var from Origin
	if md, err := orig.Metadata(); err == nil {
		from = Origin{Stream: md.Stream, Seq: md.Sequence.Stream, Time: md.Timestamp}
		if f.Attempts == 0 {
			f.Attempts = int(md.NumDelivered)
		}
		if f.Consumer == "" {
			// The consumer that gave up, from its delivery: two services
			// giving up on the same message are two dead letters, under two
			// ids (deadLetterID). Left empty, the second was a Duplicate of
			// the first, taken for itself (the same subject and payload),
			// and its failure was never stored.
			// (TestRev38TwoConsumersGivingUpAreTwoDeadLetters)
			f.Consumer = md.Consumer
		}
	}
	whole, leftOut := wholeOriginal(ctx, js, orig, from)
	m, err := newDeadLetter(prefix, tenant, itemType, whole, from, f, js.Conn().MaxPayload(), leftOut)
	if err != nil {
		return err
	}
	// The DLQ stream's duplicate window spans every tenant and an id can
	// be foreseen: when the message the stream kept under this id is
	// another, the dead letter goes again under an id that adds what it
	// carries (so a retry of this call finds it), and if that is taken too,
	// under an id of its own (a retry may then store it twice, which beats
	// losing it).
	id := m.Header.Get(HeaderNatsMsgID)
	sum := sha256.Sum256(append([]byte(m.Subject+"\x00"), m.Data...))
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce) // never fails (crypto/rand panics instead)
	for _, next := range []string{id, id + ":" + hex.EncodeToString(sum[:8]), id + ":" + hex.EncodeToString(nonce)} {
		if id != "" {
			m.Header.Set(HeaderNatsMsgID, next)
		}
		ack, err := js.PublishMsg(ctx, m)
		if err != nil {
			return fmt.Errorf("publish dead letter to %s: %w", m.Subject, err)
		}
		if id == "" || !ack.Duplicate || keptIsThis(ctx, js, ack, m) {
			return nil
		}
	}
	return fmt.Errorf("publish dead letter to %s: the DLQ stream keeps other messages under its ids", m.Subject)
}

// keptIsThis reports whether the message the DLQ stream kept under m's id
// (the PubAck of a duplicate names its stream and sequence) is m,
// published before (a retry after a lost PubAck, the original delivered
// again): the same subject and payload, and every header as m sends it
// (sameHeaders), but those a retry of the same failure may send otherwise
// (retryHeaders) and the server's own. Dead letter ids can be foreseen
// ("dlq:<consumer>:<msgid>:<stream>:<seq>"): a service of m's tenant could
// publish first under m's id, with m's subject, ids, consumer and payload
// but another class or principal, and a check of those alone took it for
// m, so the real failure was lost and the planted class and principal
// judged its replay (review round 39). A message it cannot read, or
// cannot tell is the one kept, is not taken for m: Publish then sends m
// again under another id, which may store it twice (a retry that says
// anything else, another Dlq-First-Failed-At say, is stored again) but
// never loses it.
//
// It reads with a direct get of the last message on m's subject
// ($JS.API.DIRECT.GET.<stream>.<subject>, on a stream that allows direct
// gets), a right a tenant's services can be given for their own DLQ
// subjects alone ($JS.API.DIRECT.GET.DLQ.dlq.<tenant>.>): the server
// takes no sequence in that request, so it reads no other tenant's dead
// letters. A read by sequence ($JS.API.STREAM.MSG.GET.<stream>, or a
// direct get with a JSON body) cannot be so narrowed: NATS permissions
// name subjects, and the sequence is in the body, so that right reads
// every tenant's dead letters. It is not used.
//
// The last message on the subject is the one kept only when the server
// says so: one value each of the headers it writes after the stored block
// (Nats-Stream, Nats-Subject, Nats-Sequence), naming the PubAck's stream
// and sequence. A later dead letter on the subject (another failure of the
// same tenant and item type) is another sequence: m goes again. Those
// headers come after the stored block, and a producer that writes raw
// header blocks can end its block with a blank line more and write them
// itself (review round 36); only a producer that may publish on m's
// subject, so of m's own tenant, can, and the most it makes this call do
// is take the kept message for m when it is not.
//
// NATS does not answer a request whose publish it denies: without the
// right, this waits keptReadWait, or half the time ctx has left when that
// is less, then says no. The other half is Publish's to send m again:
// waiting the whole 2 s spent a handler's deadline of 2 s or less, and the
// dead letter was never stored.
func keptIsThis(ctx context.Context, js jetstream.JetStream, ack *jetstream.PubAck, m *nats.Msg) bool {
	wait := keptReadWait
	if deadline, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(deadline)/2)
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	kept, err := requestRaw(ctx, js.Conn(), apiPrefix(js)+"DIRECT.GET."+ack.Stream+"."+m.Subject, nil)
	if err != nil {
		return false
	}
	// A status answer (404: none on the subject; 503: the stream does
	// not allow direct gets) carries none of these headers.
	is := func(name, want string) bool {
		vs := kept.Header.Values(name)
		return len(vs) == 1 && vs[0] == want
	}
	for name, want := range map[string]string{
		jetstream.StreamHeader:   ack.Stream,
		jetstream.SequenceHeader: strconv.FormatUint(ack.Sequence, 10),
		jetstream.SubjectHeader:  m.Subject,
	} {
		if !is(name, want) {
			return false
		}
	}
	return sameHeaders(kept.Header, m.Header) && bytes.Equal(kept.Data, m.Data)
}

// leftOutKeys are what Dlq-Left-Out values say was left out, sorted: each
// one's part (the text before its first colon: payload, headers,
// header_value) and the payload's SHA-256 where it names one.
func leftOutKeys(vs []string) []string {
	keys := make([]string, 0, len(vs))
	for _, v := range vs {
		part, _, _ := strings.Cut(v, ":")
		if _, rest, ok := strings.Cut(v, "(SHA-256 "); ok {
			sum, _, _ := strings.Cut(rest, ")")
			part += " " + sum
		}
		keys = append(keys, part)
	}
	slices.Sort(keys)
	return keys
}

// retryHeaders are the dead letter's headers that the same failure,
// dead-lettered again, may send otherwise, and that keptIsThis does not
// compare: Publish sets Dlq-Attempts from the delivery count and
// Dlq-Last-Failed-At to the time of the call when the service leaves them
// unset (Failure.Attempts, Failure.LastFailedAt); the service's error
// text and stack trace (Dlq-Error, Dlq-Stack) often name a time or a try;
// Dlq-Cut says only how long those two were when cut. Every other header
// is the failure's own word (class, principal, consumer, operation and
// correlation ids, first failure, what was left out) or the original's,
// and a kept message that says another is not this dead letter.
var retryHeaders = []string{HeaderAttempts, HeaderLastFailedAt, HeaderError, HeaderStack, HeaderCut}

// sameHeaders reports whether kept, the headers a direct get read back,
// are sent's as a NATS client sends them (sentValues), name by name with
// its case (the client keeps a name's case both ways), but for
// retryHeaders and the server's own (Nats-*: those it writes after the
// stored block, a Nats-TTL it keeps); the dead letter's Nats-Msg-Id is
// compared. A name one of them has and the other lacks is a difference.
//
// Dlq-Left-Out is compared by what each value says was left out (its part,
// and the payload's SHA-256 when it names one), not word for word: its
// sizes count the header block, which holds this call's attempts and
// times, and a failed read of the original names that read's error, so a
// retry of a dead letter that left something out said it otherwise.
func sameHeaders(kept, sent nats.Header) bool {
	skip := func(name string) bool {
		return slices.Contains(retryHeaders, name) || name != HeaderNatsMsgID && hasFoldPrefix(name, "nats-")
	}
	for name, vs := range sent {
		if name == HeaderLeftOut {
			if !slices.Equal(leftOutKeys(kept[name]), leftOutKeys(sentValues(vs))) {
				return false
			}
			continue
		}
		if !skip(name) && !slices.Equal(kept[name], sentValues(vs)) {
			return false
		}
	}
	for name, vs := range kept {
		if !skip(name) && len(vs) > 0 && len(sent[name]) == 0 {
			return false
		}
	}
	return true
}

// keptReadWait is the longest keptIsThis waits for its read (less when
// the caller's deadline is near).
const keptReadWait = 2 * time.Second

// sentValues returns vs as a NATS client sends them, so as keptIsThis
// reads them back: each trimmed of leading and trailing blanks, CR and LF
// turned into spaces (nats.go's writeHeaderValue; sentOtherwise).
func sentValues(vs []string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = lineBreaksToSpaces.Replace(textproto.TrimString(v))
	}
	return out
}

// lineBreaksToSpaces turns CR and LF into spaces, as a NATS client sends
// a header value.
var lineBreaksToSpaces = strings.NewReplacer("\r", " ", "\n", " ")
