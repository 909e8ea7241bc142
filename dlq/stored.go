package dlq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// storedMsg is a message read back from a stream. Read through the
// JetStream API's JSON form (STREAM.MSG.GET), it carries the header block
// exactly as the stream stored it. (The client's Stream.GetMsg parses that
// block and fails on one it cannot read; a consumer's message arrives with
// no headers at all then.) Read as a NATS message (readMsg: a message too
// large for that JSON), it carries Headers instead, the headers as the
// NATS client reads them, and Header is nil.
type storedMsg struct {
	Subject string      `json:"subject"`
	Seq     uint64      `json:"seq"`
	Header  []byte      `json:"hdrs"`
	Headers nats.Header `json:"-"`
	Data    []byte      `json:"data"`
	Time    time.Time   `json:"time"`
}

// storedJSONMax is the largest message readStored reads through
// JetStream's JSON API. That answer carries the payload in base64, a
// third larger than the message, and a NATS server closes a client it
// would have to queue more than its max_pending for (64 MiB by default)
// as a slow consumer: one answer for a message of 48 MiB cuts the
// console's connection, the one its ingester acks and its replay workers
// publish on. A server whose max_payload is at most storedJSONMax (1 MiB
// by default) takes no larger message, and its streams are read through
// the JSON API alone; on one that takes more, each message is read first
// as a NATS message (readMsg), and again through the JSON API only when
// that showed it to be at most storedJSONMax and its header block one the
// client does not read whole.
const storedJSONMax = 8 << 20

type storedMsgRequest struct {
	Seq     uint64 `json:"seq"`
	NextFor string `json:"next_by_subj,omitempty"`
}

type storedMsgResponse struct {
	Error   *jetstream.APIError `json:"error,omitempty"`
	Message *storedMsg          `json:"message,omitempty"`
}

// readStored returns message seq of stream as stored; with next, the first
// message at or after seq. It returns an error matching
// jetstream.ErrMsgNotFound when there is none, and
// jetstream.ErrStreamNotFound when the stream is gone. Without a deadline
// in ctx it gives up after 10 s. A message that may be larger than
// storedJSONMax is read as a NATS message (readMsg): its Header is then
// nil and Headers set, unless the client does not read its header block
// whole, when it is read exactly if it is small enough and fails
// otherwise. When JetStream refuses the consumer that read would take
// (errConsumerRefused), the message is read through the JSON API if it is
// known to be small enough (readStoredAtMost, or a direct get's size:
// readMsg), and fails otherwise, the error saying both.
func readStored(ctx context.Context, js jetstream.JetStream, stream string, seq uint64, next bool) (*storedMsg, error) {
	return readStoredAtMost(ctx, js, stream, seq, next, 0)
}

// readStoredAtMost reads as readStored does; atMost, when above 0, is a
// size the caller knows the message is no larger than (its subject, header
// block and payload, as a delivery of it showed), so that a message whose
// read as a NATS message JetStream refuses is read through the JSON API
// when atMost is at most storedJSONMax. The stream's own size (all it
// holds) bounds each of its messages too.
func readStoredAtMost(ctx context.Context, js jetstream.JetStream, stream string, seq uint64, next bool, atMost int) (*storedMsg, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	if js.Conn().MaxPayload() > storedJSONMax {
		st, err := readMsg(ctx, js, stream, seq, next, atMost)
		var refused *consumerRefusedError
		var found errReadJSON
		switch {
		case errors.As(err, &found):
			// A direct get found message found.seq, small enough: it is the
			// one asked for, the first at or after seq with next, unless it
			// went since.
			st, err := readJSON(ctx, js, stream, found.seq, false)
			if next && errors.Is(err, jetstream.ErrMsgNotFound) {
				// Gone since: the first at or after seq is now the first
				// after it.
				return readStoredAtMost(ctx, js, stream, found.seq+1, true, atMost)
			}
			return st, err
		case errors.Is(err, errReadExactly):
			seq, next = st.Seq, false
		case errors.As(err, &refused) && refused.small:
			st, jerr := readJSON(ctx, js, stream, seq, next)
			if jerr != nil {
				return nil, fmt.Errorf("%w (read through JetStream's JSON API because %v)", jerr, refused)
			}
			return st, nil
		default:
			return st, err
		}
	}
	return readJSON(ctx, js, stream, seq, next)
}

// readJSON reads as readStored does, through JetStream's JSON API
// ($JS.API.STREAM.MSG.GET), whose answer carries the header block exactly
// as stored.
func readJSON(ctx context.Context, js jetstream.JetStream, stream string, seq uint64, next bool) (*storedMsg, error) {
	req := storedMsgRequest{Seq: seq}
	if next {
		req.NextFor = ">"
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	msg, err := js.Conn().RequestWithContext(ctx, apiPrefix(js)+"STREAM.MSG.GET."+stream, body)
	if err != nil {
		return nil, fmt.Errorf("read %s #%d from the stream: %w", stream, seq, err)
	}
	var resp storedMsgResponse
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return nil, fmt.Errorf("read %s #%d from the stream: %w", stream, seq, err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return nil, fmt.Errorf("read %s #%d from the stream: %w", stream, seq, jetstream.ErrMsgNotFound)
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeStreamNotFound:
		return nil, fmt.Errorf("read %s #%d from the stream: %w", stream, seq, jetstream.ErrStreamNotFound)
	case resp.Error != nil:
		return nil, fmt.Errorf("read %s #%d from the stream: %w", stream, seq, resp.Error)
	case resp.Message == nil:
		return nil, fmt.Errorf("read %s #%d from the stream: %w", stream, seq, jetstream.ErrInvalidJetStreamResponse)
	}
	return resp.Message, nil
}

// isSubject reports whether subject is the one a stored message was
// published to, given as readStored read it: the API's JSON carries each
// byte of it that is not valid UTF-8 as U+FFFD (NATS takes any bytes but
// white space in a subject), so the two are compared as that JSON writes
// them. Subjects that differ only in such bytes compare equal: whoever
// needs to tell messages apart compares their stored time too.
func (m *storedMsg) isSubject(subject string) bool {
	return m.Subject == subject || CleanText(m.Subject) == CleanText(subject)
}

// apiPrefix is the subject prefix of js's API requests.
func apiPrefix(js jetstream.JetStream) string {
	o := js.Options()
	switch {
	case o.APIPrefix != "":
		return strings.TrimSuffix(o.APIPrefix, ".") + "."
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	}
	return jetstream.DefaultAPIPrefix
}

// errReadExactly is readMsg's answer for a message whose header block the
// NATS client does not read whole and which is small enough for the JSON
// API (storedJSONMax): readStored reads it again there, exactly.
var errReadExactly = errors.New("the header block is to be read exactly")

// errReadJSON is readMsg's answer for message seq, which a direct get
// found and showed to be at most storedJSONMax: readStoredAtMost reads it
// through the JSON API.
type errReadJSON struct{ seq uint64 }

func (e errReadJSON) Error() string {
	return fmt.Sprintf("message #%d is to be read through JetStream's JSON API", e.seq)
}

// readMsg reads as readStored does, the message as a NATS message, its
// payload as it is, or says to read it through the JSON API. On a stream
// that allows direct gets, a direct get says how large the message is
// (directSize), and one of at most storedJSONMax is read through the JSON
// API (errReadJSON: one request more, where a consumer would take three);
// where the stream's info says it holds none, there is none;
// nothing else of the direct get's answer is read: which message it is,
// when and on which subject it was stored are headers the server writes
// after the stored block, and a producer can end its block with a blank
// line more, so that the client stops before them and reads headers of
// the producer's choosing under those names, padded so that no length
// tells (review round 36). Any other message is read by a consumer of its
// own (readByConsumer): the server writes which message a delivery is,
// and when it was stored, in its reply subject, and its subject is the
// delivery's. Its answer is no larger than the message and a few
// headers, and a message is never larger than the max_payload it was
// published under, which a server never sets above its max_pending; the
// pull is also bounded, and a larger message fails for itself alone. The
// NATS client reads the header block into headers: when it does not read
// all of it, the message is read again exactly (errReadExactly, with the
// message's sequence) if it is at most storedJSONMax, and fails
// otherwise.
//
// When JetStream refuses the consumer (errConsumerRefused), the error is
// a *consumerRefusedError, small when the message is known to be at most
// storedJSONMax: atMost (see readStoredAtMost) or all the stream holds
// (its bytes, as the stream's info read here gave them) is no more; on a
// stream that allows direct gets, the direct get showed it is larger, and
// it is not read.
func readMsg(ctx context.Context, js jetstream.JetStream, stream string, seq uint64, next bool, atMost int) (*storedMsg, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, fmt.Errorf("read %s #%d from the stream: %w", stream, seq, err)
	}
	info := s.CachedInfo()
	direct := 0 // the size a direct get showed (0: none made, or none found)
	if info.Config.AllowDirect {
		// Where the stream's leader (its info) says there is none, there
		// is none; before its first, the first at or after seq is its
		// first.
		at := seq
		switch first, last := info.State.FirstSeq, info.State.LastSeq; {
		case seq > last || !next && seq < first:
			return nil, fmt.Errorf("read %s #%d from the stream: it holds #%d to #%d: %w", stream, seq, first, last, jetstream.ErrMsgNotFound)
		case seq < first:
			at = first
		}
		direct, err = directSize(ctx, js, stream, at)
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			// Not the stream's word: a follower that lags, or a mirror
			// that serves direct gets for it, answers too. Its leader
			// answers the consumer's read.
			direct = 0
		case err != nil:
			return nil, fmt.Errorf("read %s #%d from the stream: %w", stream, at, err)
		case direct <= storedJSONMax:
			return nil, errReadJSON{seq: at}
		}
	}
	st, size, err := readByConsumer(ctx, js, info, seq)
	switch {
	case errors.Is(err, errConsumerRefused) && direct > 0:
		return nil, fmt.Errorf("read %s #%d from the stream: %w; a direct get shows it is %d bytes, more than JetStream's JSON API may answer (%d bytes: "+
			"a larger answer may cut the console's connection to NATS), and a direct get's own answer says which message it is in headers its producer can forge",
			stream, seq, err, direct, storedJSONMax)
	case errors.Is(err, errConsumerRefused):
		return nil, &consumerRefusedError{stream: stream, seq: seq, err: err, atMost: atMost, streamBytes: info.State.Bytes,
			small: (atMost > 0 && atMost <= storedJSONMax) || info.State.Bytes <= storedJSONMax, direct: info.Config.AllowDirect}
	case err != nil:
		return nil, fmt.Errorf("read %s #%d from the stream: %w", stream, seq, err)
	case !next && st.Seq != seq:
		return nil, fmt.Errorf("read %s #%d from the stream: %w", stream, seq, jetstream.ErrMsgNotFound)
	case st.Seq < seq:
		return nil, fmt.Errorf("read %s #%d from the stream: the answer says it is message #%d, before the one asked for", stream, seq, st.Seq)
	case st.Headers == nil && size <= storedJSONMax:
		return st, errReadExactly
	case st.Headers == nil:
		return nil, fmt.Errorf("read %s #%d from the stream: the NATS client does not read its header block whole, and at %d bytes it is too large "+
			"for JetStream's JSON API, which reads the block exactly (at most %d bytes)", stream, seq, size, storedJSONMax)
	}
	return st, nil
}

// consumerRefusedError is readMsg's error for a message whose read by a
// consumer JetStream refused (err, matching errConsumerRefused). small
// says the message is known to be at most storedJSONMax, by atMost or by
// streamBytes (all the stream held): readStoredAtMost then reads it
// through the JSON API instead. A larger one, or one of unknown size, is
// not read there: one answer a third larger than a message of tens of MiB
// cuts the console's connection (storedJSONMax).
type consumerRefusedError struct {
	stream      string
	seq         uint64
	err         error
	atMost      int
	streamBytes uint64
	small       bool
	direct      bool // the stream allows direct gets: one answered "none", which is not the stream's word
}

func (e *consumerRefusedError) Error() string {
	msg := fmt.Sprintf("read %s #%d by a consumer: %v", e.stream, e.seq, e.err)
	if e.small {
		return msg
	}
	known := "its size is not known"
	if e.atMost > 0 {
		known = fmt.Sprintf("its delivery says it may be up to %d bytes", e.atMost)
	}
	if e.direct {
		return fmt.Sprintf("%s; not read through JetStream's JSON API instead: %s (a direct get found none, which a follower that lags or a mirror may answer), "+
			"the stream holds %d bytes, and that API's answer to a message over %d bytes may cut the console's connection to NATS",
			msg, known, e.streamBytes, storedJSONMax)
	}
	return fmt.Sprintf("%s; not read through JetStream's JSON API instead: %s, the stream holds %d bytes, and that API's answer to a message over %d bytes "+
		"may cut the console's connection to NATS; with direct gets allowed (nats stream edit %s --allow-direct) one says how large a message is, and one of up to %d bytes is read there",
		msg, known, e.streamBytes, storedJSONMax, e.stream, storedJSONMax)
}

func (e *consumerRefusedError) Unwrap() error { return e.err }

// directSize returns the size of the answer to a direct get of message
// seq of stream: the message and the few headers the server adds. Nothing
// else of the answer is read (readMsg), and "none" is not the stream's
// word (a follower or a mirror may answer). A status is taken as one only
// when its block is the status line alone: a stored message's is longer
// by the server's headers, so no producer's block makes a message read as
// "none" or as NATS not answering (requestRaw).
func directSize(ctx context.Context, js jetstream.JetStream, stream string, seq uint64) (int, error) {
	body, err := json.Marshal(storedMsgRequest{Seq: seq})
	if err != nil {
		return 0, err
	}
	m, err := requestRaw(ctx, js.Conn(), apiPrefix(js)+"DIRECT.GET."+stream, body)
	if err != nil {
		return 0, err
	}
	if len(m.Data) == 0 && m.Header.Get("Status") != "" && blockLen(m) <= statusBlockLen(m.Header) {
		return 0, statusErr(m, "direct get")
	}
	return m.Size(), nil
}

// requestRaw sends body to subject as a request and returns the first
// answer as it came. The NATS client's Request (and a subscription's
// NextMsg) takes any answer with no payload and a Status header of 503
// for "no responders", and returns that error instead: a stored message a
// producer gave no payload and that header reads so too, and was taken
// for NATS not answering, held for half an hour or stopping the sweep
// (review round 36). The caller tells a server's status (statusErr) from
// a message by what only the server writes: a direct get's headers after
// the stored block, a consumer's delivery's reply subject.
func requestRaw(ctx context.Context, nc *nats.Conn, subject string, body []byte) (*nats.Msg, error) {
	answers := make(chan *nats.Msg, 1) // room for the one answer, whatever its size: a channel's limit is its length
	sub, err := nc.ChanSubscribe(nc.NewInbox(), answers)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := sub.AutoUnsubscribe(1); err != nil {
		return nil, err
	}
	if err := nc.PublishRequest(subject, sub.Subject, body); err != nil {
		return nil, err
	}
	select {
	case m := <-answers:
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// statusBlockLen is the length of the header block of a status answer the
// NATS client read as h: its status line alone.
func statusBlockLen(h nats.Header) int {
	n := len(headerVersion) + 1 + len(h.Get("Status")) + 4
	if d := h.Get("Description"); d != "" {
		n += 1 + len(d)
	}
	return n
}

// readByConsumer reads the first message at or after seq of the stream
// info describes by a consumer of its own (ephemeral, no acks, in memory,
// deleted when done or after storedReadIdle, or the stream's consumer
// limit on inactivity when that is lower); the sweep reads a subject's
// bytes with it (deliveredSubject). Its one pull asks for no more than the
// connection's max payload and room for the delivery's subjects
// (deliveryRoom): a larger message is refused by the server (409 Message
// Size Exceeds MaxBytes), never sent. size is the answer's
// size; st.Headers is nil when the NATS client did not read the header
// block whole. The consumer never acks, so it never removes a message.
//
// It makes none on a work-queue stream: JetStream takes there only a
// consumer that acks explicitly and delivers all (from the stream's first
// message, not seq), and refuses to make any consumer whose subjects
// overlap one the stream has, so that while the console's lived the
// stream's own consumers could not be made again. It returns an error
// matching errConsumerRefused then, and when JetStream refuses to make
// the consumer (a JetStream API error: a consumer limit of the stream or
// account, say); not when the stream is gone (jetstream.ErrStreamNotFound)
// or NATS did not answer.
func readByConsumer(ctx context.Context, js jetstream.JetStream, info *jetstream.StreamInfo, seq uint64) (st *storedMsg, size int, err error) {
	stream := info.Config.Name
	if info.Config.Retention == jetstream.WorkQueuePolicy {
		return nil, 0, fmt.Errorf("%w: none is made on stream %s, a work queue: JetStream takes only one that acks explicitly and delivers all there, "+
			"and refuses the stream's own consumers that overlap it while it lives", errConsumerRefused, stream)
	}
	idle := storedReadIdle
	if limit := info.Config.ConsumerLimits.InactiveThreshold; limit > 0 && limit < idle {
		idle = limit
	}
	cons, err := js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: seq, AckPolicy: jetstream.AckNonePolicy,
		MaxDeliver: 1, InactiveThreshold: idle, Replicas: 1, MemoryStorage: true,
		Description: "quarantine: reads one message of the stream",
	})
	var apiErr *jetstream.APIError
	switch {
	case err != nil && errors.As(err, &apiErr) && !errors.Is(err, jetstream.ErrStreamNotFound):
		return nil, 0, fmt.Errorf("%w: %w", errConsumerRefused, err)
	case err != nil:
		return nil, 0, fmt.Errorf("make a consumer to read it: %w", err)
	}
	cinfo := cons.CachedInfo()
	defer func() {
		_ = js.DeleteConsumer(context.WithoutCancel(ctx), stream, cinfo.Name) // else gone once idle
	}()
	if cinfo.NumPending == 0 {
		return nil, 0, jetstream.ErrMsgNotFound
	}
	body, err := json.Marshal(struct {
		Batch    int  `json:"batch"`
		MaxBytes int  `json:"max_bytes"`
		NoWait   bool `json:"no_wait"`
	}{1, int(js.Conn().MaxPayload()) + deliveryRoom, true})
	if err != nil {
		return nil, 0, err
	}
	m, err := requestRaw(ctx, js.Conn(), apiPrefix(js)+"CONSUMER.MSG.NEXT."+stream+"."+cinfo.Name, body)
	if err != nil {
		return nil, 0, err
	}
	size = m.Size()
	if m.Reply == "" { // a status: every stream message comes with its ack subject
		return nil, size, statusErr(m, "read by a consumer")
	}
	md, err := m.Metadata()
	if err != nil {
		return nil, size, fmt.Errorf("read by a consumer: %w", err)
	}
	st = &storedMsg{Subject: m.Subject, Seq: md.Sequence.Stream, Data: m.Data, Time: md.Timestamp}
	switch n := blockLen(m); {
	case n == 0:
		st.Headers = nats.Header{}
	case n == headerBlockLen(m.Header):
		st.Headers = m.Header
	}
	return st, size, nil
}

// deliveryRoom is what a pull of one message asks for beyond the
// connection's max payload: the server counts a delivery's subject and
// reply subject against the pull's bytes too, and a message published
// whole under max_payload would be refused otherwise (409 Message Size
// Exceeds MaxBytes). A subject is bounded by the server's control line
// (4 KiB by default).
const deliveryRoom = 8 << 10

// storedReadIdle is how long a consumer readByConsumer made lives on when
// its removal failed, unless the stream's consumer limits allow less.
const storedReadIdle = 30 * time.Second

// errConsumerRefused says that JetStream refuses (or would refuse) the
// consumer readByConsumer reads by.
var errConsumerRefused = errors.New("JetStream refuses the consumer that would read it")

// blockLen is the length of the header block m came with (0: none), what
// the client received, whatever it made of it.
func blockLen(m *nats.Msg) int {
	return m.Size() - len(m.Subject) - len(m.Reply) - len(m.Data)
}

// statusErr is the error a status message m answered a read with (what:
// which read): jetstream.ErrMsgNotFound for 404 (none there) and 408 (a
// consumer's request ended with none), nats.ErrNoResponders for 503
// (nobody took the request: requestRaw).
func statusErr(m *nats.Msg, what string) error {
	code, desc := m.Header.Get("Status"), m.Header.Get("Description")
	switch code {
	case "404", "408":
		return fmt.Errorf("%s: %s %s: %w", what, code, desc, jetstream.ErrMsgNotFound)
	case "503":
		return fmt.Errorf("%s: %w", what, nats.ErrNoResponders)
	}
	return fmt.Errorf("%s: the server answered %q %q", what, short(code), short(desc))
}
