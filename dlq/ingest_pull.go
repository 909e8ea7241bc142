package dlq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The ingester reads its consumers with JetStream's pull protocol itself
// (puller), not with the client's Consume. The client tells the server's
// status messages (idle heartbeats, "408 Request Timeout", "409 Consumer
// Deleted"...) from stream messages by their headers alone: a message with
// no payload and a Status header is taken for a status. A dead letter sent
// so was dropped unacked and delivered again forever, and one with Status
// 400, "409 Consumer Deleted" or "408" with a bad pending count stopped
// Consume for good: one hostile dead letter stopped ingest. The server
// sends its status messages with no reply subject and every stream message
// with its ack subject; the puller goes by that.

// Pull request settings (the server's pull protocol, in nanoseconds).
const (
	pullExpires   = 30 * time.Second // a request ends after this (408) and is renewed
	pullHeartbeat = 5 * time.Second  // the server says it still holds the request this often when idle
)

// pullRequest is what $JS.API.CONSUMER.MSG.NEXT takes.
type pullRequest struct {
	Batch     int           `json:"batch"`
	MaxBytes  int           `json:"max_bytes,omitempty"`
	Expires   time.Duration `json:"expires"`
	Heartbeat time.Duration `json:"idle_heartbeat"`
}

// puller keeps up to batch messages of one durable pull consumer asked
// for (at most maxBytes each request), hands each stream message to
// handle, and asks for more when fewer than half are outstanding. It asks
// anew when its requests are lost (no heartbeat, a reconnect, a leader
// change), and calls gone when the consumer is not there (deleted, or no
// one answers its subject).
type puller struct {
	nc       *nats.Conn
	subject  string // the consumer's next-message API subject
	stream   string // the stream and consumer it pulls from: what an ack subject
	durable  string // of a message it takes names (takes)
	inc      *incarnation
	batch    int
	maxBytes int
	handle   func(jetstream.Msg)
	gone     func()
	log      *slog.Logger

	mu      sync.Mutex
	sub     *nats.Subscription
	pending int       // messages asked for, neither delivered nor ended
	seen    time.Time // when the server last sent anything
	busy    bool      // handle is running (it may wait for the writers)
	oneBig  bool      // a message is over maxBytes: ask for it alone, unlimited
	stopped bool
	// backlog: when the last message was handled, others waited in the
	// inbox behind it; emptyAt: when the inbox was last seen empty, or a
	// message came to it empty. A message that waited in the inbox (behind
	// a handle blocked on the writers) arrived after emptyAt; one that did
	// not arrived as it was handed over. See pulledMsg.received.
	backlog bool
	emptyAt time.Time
	// foreignSeen counts the messages dropped as not JetStream's
	// (foreign), foreignAt is when it last warned of them.
	foreignSeen int
	foreignAt   time.Time
}

// drainWithin bounds how long a puller's stop waits for the messages
// already on their way to its inbox to be handed to handle.
const drainWithin = 5 * time.Second

// startPuller subscribes to an inbox for stream's consumer durable (inc:
// the one whose acks its messages may send) and asks for the first
// messages. stop asks for no more and drains the inbox: it removes the
// inbox's interest (the server then drops the requests still open) and
// hands what had come to it, or was on its way, to handle before it
// returns (at most drainWithin), so that none is left unseen until its ack
// wait; the handler decides whether to keep it or hand it back.
func startPuller(nc *nats.Conn, apiPrefix, stream, durable string, inc *incarnation, batch, maxBytes int, handle func(jetstream.Msg), gone func(), log *slog.Logger) (stop func(), err error) {
	p := &puller{nc: nc, subject: apiPrefix + "CONSUMER.MSG.NEXT." + stream + "." + durable, stream: stream, durable: durable, inc: inc,
		batch: batch, maxBytes: maxBytes, handle: handle, gone: gone, log: log.With("stream", stream, "consumer", durable)}
	p.sub, err = nc.Subscribe(nc.NewInbox(), p.receive)
	if err != nil {
		return nil, fmt.Errorf("subscribe for %s: %w", p.subject, err)
	}
	// What is asked for bounds what waits here.
	if err := p.sub.SetPendingLimits(-1, -1); err != nil {
		_ = p.sub.Unsubscribe()
		return nil, fmt.Errorf("subscribe for %s: %w", p.subject, err)
	}
	status := nc.StatusChanged(nats.CONNECTED)
	done := make(chan struct{})
	p.mu.Lock()
	p.seen = time.Now()
	p.emptyAt = p.seen
	p.refill()
	p.mu.Unlock()
	go p.watch(status, done)
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			p.stopped = true
			p.mu.Unlock()
			close(done)
			nc.RemoveStatusListener(status)
			p.drain()
		})
	}, nil
}

// drain removes the inbox's interest and waits, at most drainWithin, until
// receive has taken every message that came to it before the server knew;
// past that, or when draining cannot start, the rest is dropped (and
// delivered again after its ack wait).
func (p *puller) drain() {
	closed := p.sub.StatusChanged(nats.SubscriptionClosed)
	if err := p.sub.Drain(); err != nil {
		p.log.Debug("draining the pull inbox failed; what it holds comes again after its ack wait", "err", err)
		_ = p.sub.Unsubscribe()
		return
	}
	select {
	case <-closed:
	case <-time.After(drainWithin):
		p.log.Warn("the pull inbox did not drain in time; what it still holds comes again after its ack wait", "within", drainWithin)
		_ = p.sub.Unsubscribe()
	}
}

// receive takes what the server sends to the inbox.
func (p *puller) receive(m *nats.Msg) {
	p.mu.Lock()
	p.seen = time.Now()
	if !p.backlog {
		// It came to an empty inbox and was handed over as it came: what
		// waits behind it came after.
		p.emptyAt = p.seen
	}
	received := p.emptyAt // when it waited in the inbox: since then at most
	if m.Reply == "" {
		p.status(m)
		p.noteInbox()
		p.mu.Unlock()
		return
	}
	if !p.takes(m) {
		// Not a delivery of this consumer: a client that may publish on
		// the inbox (_INBOX.>) sent it, or a consumer of another stream
		// or name delivers there (a push consumer's deliver subject is
		// not checked against any permission); stored, it would be a dead
		// letter the DLQ stream never held.
		p.foreign(m)
		p.noteInbox()
		p.mu.Unlock()
		return
	}
	// A stream message, whatever its headers say.
	p.pending = max(p.pending-1, 0)
	p.busy = true
	p.mu.Unlock()
	p.handle(pulledMsg{m: m, inc: p.inc, received: received})
	p.mu.Lock()
	p.busy = false
	p.seen = time.Now()
	p.noteInbox()
	p.refill()
	p.mu.Unlock()
}

// takes says whether m, a message with a reply on the inbox, is a
// delivery of the consumer the puller pulls from: its reply is a
// JetStream ack subject (the server refuses one in a client's publish)
// naming that stream and consumer. Every delivery JetStream makes carries
// one, with or without a domain.
// (TestRev38ForgedMessagesOnTheInboxAreNotTaken)
func (p *puller) takes(m *nats.Msg) bool {
	md, err := m.Metadata()
	return err == nil && md.Stream == p.stream && md.Consumer == p.durable
}

// foreignEvery bounds how often a puller warns of messages on its inbox
// that are not deliveries of its consumer.
const foreignEvery = time.Minute

// foreign drops m, a message on the inbox that is not a delivery of the
// puller's consumer (takes; mu held), and says so at most once per foreignEvery.
func (p *puller) foreign(m *nats.Msg) {
	p.foreignSeen++
	if now := time.Now(); now.Sub(p.foreignAt) >= foreignEvery {
		p.foreignAt = now
		p.log.Warn("a message on the pull inbox that is not a delivery of its consumer was dropped: a client may publish on the console's inbox, or a consumer of another stream delivers there (deny _INBOX.> publish, docs/access.md)",
			"reply", cutText(m.Reply, 200), "dropped", p.foreignSeen)
	}
}

// noteInbox records, as receive returns (mu held), whether messages wait
// in the inbox behind the one handled (the client counts that one as
// pending until receive returns).
func (p *puller) noteInbox() {
	now := time.Now()
	queued, _, err := p.sub.Pending()
	p.backlog = err != nil || queued > 1
	if !p.backlog {
		p.emptyAt = now
	}
}

// status handles one of the server's status messages (mu held). It asks
// for more at once only when it knows what is outstanding; after a refusal
// the watch asks again, so a refusal repeated cannot become a loop.
func (p *puller) status(m *nats.Msg) {
	code, desc := m.Header.Get("Status"), strings.ToLower(m.Header.Get("Description"))
	switch {
	case code == "100": // idle heartbeat: the requests are held
	case code == "409" && strings.Contains(desc, "consumer deleted"), code == "503":
		// Deleted, or nobody answers its subject: set up again. Whether
		// the consumer is another one now is read before anything is
		// made again (Ingester.again, retireReplaced: its creation time),
		// not taken from this message: a client that may publish on the
		// inbox can send one as the server would, and retiring on its
		// word would leave every message in flight unacked, again and
		// again; but a lookup that does not answer then retires it, as
		// before (saidDeleted). (TestRev38ForgedMessagesOnTheInboxAreNotTaken)
		p.pending = 0
		p.log.Warn("the ingest consumer is gone", "status", code, "description", desc)
		if code == "409" {
			p.inc.saidDeleted()
		}
		p.gone()
	case code == "409" && strings.Contains(desc, "leadership change"):
		p.pending = 0 // every request is gone
		p.refill()
	case code == "404", code == "408", code == "409":
		// A request ended, with messages left to deliver when it says so.
		if strings.Contains(desc, "exceeds maxbytes") {
			p.oneBig = true
		}
		if left, err := strconv.Atoi(m.Header.Get("Nats-Pending-Messages")); err == nil {
			p.pending = max(p.pending-left, 0)
			p.refill()
			return
		}
		p.pending = 0 // not said: the watch asks again
		p.log.Debug("a pull request ended", "status", code, "description", desc)
	default:
		p.pending = 0
		p.log.Warn("the server refused a pull request; asking again shortly", "status", code, "description", desc)
	}
}

// refill asks for more when fewer than half of batch are outstanding
// (mu held).
func (p *puller) refill() {
	if p.stopped || p.pending > p.batch/2 {
		return
	}
	req := pullRequest{Batch: p.batch - p.pending, MaxBytes: p.maxBytes, Expires: pullExpires, Heartbeat: pullHeartbeat}
	if p.oneBig {
		// One message larger than a request's bytes, alone and unlimited:
		// it would otherwise be refused (409) every time and hold up the rest.
		req.Batch, req.MaxBytes, p.oneBig = 1, 0, false
	}
	body, err := json.Marshal(req)
	if err == nil {
		err = p.nc.PublishRequest(p.subject, p.sub.Subject, body)
	}
	if err != nil {
		p.log.Warn("pull request not sent; will ask again", "err", err)
		return
	}
	p.pending += req.Batch
}

// watch asks anew when the server has sent nothing for two heartbeats
// while nothing waited to be handled (the requests were lost: a server
// restarted, a connection dropped) and after every reconnect.
func (p *puller) watch(status chan nats.Status, done chan struct{}) {
	tick := time.NewTicker(pullHeartbeat)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case _, ok := <-status:
			if !ok {
				return
			}
			p.mu.Lock()
			p.pending = 0
			p.refill()
			p.mu.Unlock()
		case <-tick.C:
			queued, _, _ := p.sub.Pending()
			p.mu.Lock()
			switch {
			case p.busy || queued > 0:
				p.seen = time.Now() // waiting for the writers, not for the server
			case time.Since(p.seen) > 2*pullHeartbeat:
				p.seen = time.Now()
				p.pending = 0
				p.refill()
			}
			p.mu.Unlock()
		}
	}
}

// incarnation is one life of a consumer as a session reads it: the
// consumer of that name made at that time (a consumer made again, alone or
// with its stream, has another time). An ack names only the stream, the
// consumer and the stream sequence, so the server applies an ack for a
// message of a consumer that was deleted to the message of the same
// sequence of the consumer made again under its name: if the stream was
// made again too, another message, which is then never delivered again
// (nats-server drops it from the consumer's pending and redelivery state,
// even when it was nak'd to come again). So once its consumer is made again,
// an incarnation is retired and its messages are neither acked nor nak'd
// nor kept in progress: the new consumer delivers again whatever its stream
// still holds (it starts with DeliverAll, and redelivery is deduplicated),
// and what went with an old stream is gone whatever the console sends.
type incarnation struct {
	stream  string
	created time.Time // the consumer's creation time, as the server gave it

	mu      sync.RWMutex
	retired bool
	seenAt  time.Time // when the consumer was last asked for and found to be this one
	// deletedAt: when a status on the inbox said the consumer was deleted
	// (zero: none since a lookup found it the same, asked after it). Not
	// proof (a client may send one), so it retires c only when the
	// consumer cannot be read either (Ingester.retireReplaced).
	deletedAt time.Time
}

// errRetired is what settling a message of a retired incarnation returns.
var errRetired = errors.New("its consumer was made again: not acked, nak'd or kept in progress, lest it settle the new consumer's message of that sequence")

// settle runs send (an ack, nak or in-progress of a message of c) unless c
// is retired; retire waits for a send under way.
func (c *incarnation) settle(send func() error) error {
	if c == nil {
		return send()
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.retired {
		return errRetired
	}
	return send()
}

// retire stops c's messages from being settled from now on.
func (c *incarnation) retire() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.retired = true
	c.mu.Unlock()
}

// confirmed records that c's consumer, asked for at at, was still c: a
// status that said it was deleted before is answered (saidDeleted), and
// a lookup that fails later does not retire c on its word.
func (c *incarnation) confirmed(at time.Time) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if at.After(c.seenAt) {
		c.seenAt = at
	}
	if at.After(c.deletedAt) {
		c.deletedAt = time.Time{}
	}
}

// lastSeen is when c's consumer was last found to be c (zero: never since
// it started).
func (c *incarnation) lastSeen() time.Time {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.seenAt
}

// saidDeleted records that a status said c's consumer was deleted.
func (c *incarnation) saidDeleted() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.deletedAt = time.Now()
	c.mu.Unlock()
}

// wasSaidDeleted reports whether a status said c's consumer was deleted.
func (c *incarnation) wasSaidDeleted() bool {
	if c == nil {
		return false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return !c.deletedAt.IsZero()
}

// isRetired reports whether c was retired.
func (c *incarnation) isRetired() bool {
	if c == nil {
		return false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.retired
}

// pulledMsg is a stream message the puller received, as a jetstream.Msg:
// its metadata read from its ack subject, its acks sent there while its
// incarnation is not retired (errRetired otherwise).
//
// received is when the client received it, at the earliest: when the
// puller took it, or, when it had waited in the inbox behind others, the
// last time the inbox was seen empty. The flush asks whether its consumer
// is still the same before settling a batch that has waited longer than a
// moment since (see Ingester.confirmIncarnations).
type pulledMsg struct {
	m        *nats.Msg
	inc      *incarnation
	received time.Time
}

var _ jetstream.Msg = pulledMsg{}

func (p pulledMsg) Metadata() (*jetstream.MsgMetadata, error) {
	md, err := p.m.Metadata()
	if err != nil {
		return nil, err
	}
	return &jetstream.MsgMetadata{
		Sequence:     jetstream.SequencePair{Consumer: md.Sequence.Consumer, Stream: md.Sequence.Stream},
		NumDelivered: md.NumDelivered, NumPending: md.NumPending, Timestamp: md.Timestamp,
		Stream: md.Stream, Consumer: md.Consumer, Domain: md.Domain,
	}, nil
}

// headerBlockLen is the length of the header block the message came with
// (0: none): what the client received, whatever it made of it.
func (p pulledMsg) headerBlockLen() int {
	return p.m.Size() - len(p.m.Subject) - len(p.m.Reply) - len(p.m.Data)
}

func (p pulledMsg) Data() []byte         { return p.m.Data }
func (p pulledMsg) Headers() nats.Header { return p.m.Header }
func (p pulledMsg) Subject() string      { return p.m.Subject }
func (p pulledMsg) Reply() string        { return p.m.Reply }
func (p pulledMsg) Ack() error           { return p.inc.settle(func() error { return p.m.Ack() }) }
func (p pulledMsg) DoubleAck(ctx context.Context) error {
	return p.inc.settle(func() error { return p.m.AckSync(nats.Context(ctx)) })
}
func (p pulledMsg) Nak() error { return p.inc.settle(func() error { return p.m.Nak() }) }
func (p pulledMsg) NakWithDelay(delay time.Duration) error {
	return p.inc.settle(func() error { return p.m.NakWithDelay(delay) })
}
func (p pulledMsg) InProgress() error { return p.inc.settle(func() error { return p.m.InProgress() }) }
func (p pulledMsg) Term() error       { return p.inc.settle(func() error { return p.m.Term() }) }
func (p pulledMsg) TermWithReason(reason string) error {
	return p.inc.settle(func() error { return p.m.Respond([]byte("+TERM " + reason)) })
}
