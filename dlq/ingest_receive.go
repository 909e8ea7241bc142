package dlq

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// rereadConcurrency bounds the messages read again from the stream at
// once for one batch.
const rereadConcurrency = 8

// msgSizeHeader is the header a consumer made headers only adds to each
// message it delivers, in place of the payload it leaves out: the
// payload's size. Any producer may set it too.
const msgSizeHeader = nats.MsgSize

// records turns a batch into records. A DLQ message that arrived with a
// header block the NATS client could not read, or did not read whole
// (clientReadWhole), has its header block read again from the stream,
// exactly as stored; one that arrived with no block at all (none sent) is
// not read again. When that read fails for a reason other than the message
// being gone, the message is left for a later delivery (at most
// maxHeaderRereads times) rather than stored without its headers; records
// returns the batch without it.
//
// A DLQ message that may have come without its payload (mayLackPayload: a
// consumer made headers only by hand delivers the headers, a Nats-Msg-Size
// header and no payload) is read whole from the stream, headers and
// payload as stored, and stored so, under the delivery it came as. While
// that read fails for a reason other than the message being gone from the
// stream, the message is left for a later delivery, at most
// maxHeaderRereads times, as a header block is: stored sooner, it would be
// acked without its payload; left for good, it would hold the consumer's
// ack floor and a place in its MaxAckPending, and enough of them would
// stop ingest for everyone. One the stream no longer holds, or still could
// not be read at its last delivery allowed, is stored as delivered,
// flagged payload_unverified (Received.PayloadErr). Whole reads stop for the batch once they have
// brought MaxBatchBytes of payload: the rest come again (a consumer made
// headers only delivers a thousand small messages where whole it would
// deliver what fits a batch). A message with a payload never pays a read.
func (in *Ingester) records(ctx context.Context, batch []item) ([]item, []Record) {
	if in.whileReading != nil {
		in.whileReading()
	}
	recvd := make([]Received, len(batch))
	later := make([]bool, len(batch))
	var wg sync.WaitGroup
	sem := make(chan struct{}, rereadConcurrency)
	var fetched atomic.Int64 // payload bytes read whole for this batch
	for i, it := range batch {
		if it.rec != nil {
			continue
		}
		r := &recvd[i]
		*r = in.received(it.msg)
		block := r.Header == nil || !clientReadWhole(it.msg) // the header block must be read again
		if p, ok := it.msg.(pulledMsg); ok && block && p.headerBlockLen() == 0 {
			r.HeaderBlock = []byte{} // it came with none: nothing to read again
			block = false
		}
		whole := mayLackPayload(*r, block)
		switch {
		case !block && !whole:
			continue
		case r.MetadataErr != nil: // no sequence to read it by
			if whole {
				r.PayloadErr = fmt.Errorf("its delivery names no stream sequence: %w", r.MetadataErr)
			}
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if whole && fetched.Load() >= int64(in.cfg.MaxBatchBytes) {
				later[i] = in.comeAgain(it.msg, r, "the batch holds enough payload read from the stream already", nil)
				return
			}
			later[i] = in.rereadStored(ctx, it.msg, r, block, whole)
			if whole {
				fetched.Add(int64(len(r.Data)))
			}
		})
	}
	wg.Wait()
	keep := batch[:0:0]
	recs := make([]Record, 0, len(batch))
	for i, it := range batch {
		switch {
		case later[i]:
			continue
		case it.rec != nil:
			recs = append(recs, *it.rec)
		default:
			recs = append(recs, ParseDLQ(in.cfg.Prefix, recvd[i]))
		}
		keep = append(keep, it)
	}
	return keep, recs
}

// mayLackPayload reports whether r (block: its header block must be read
// again) may be a delivery of a consumer made headers only, and so lack
// the payload the stream holds: it has no payload, and carries
// Nats-Msg-Size or a header block the client did not read whole. The
// header proves nothing (a producer may set it, and an empty payload is
// legal): only the stream's copy tells. The server writes its line in
// place of the block's last two bytes, the CR LF that end a block as
// clients write it; a producer's block that ends otherwise has the line
// run into its last name or value ("X-A: bNats-Msg-Size: 9"), which is
// read as carrying it too.
func mayLackPayload(r Received, block bool) bool {
	if len(r.Data) > 0 {
		return false
	}
	_, sized := r.Header[msgSizeHeader]
	return sized || block || sizeRunIn(r.Header)
}

// clientReadWhole reports whether the NATS client read all of m's header
// block: the block it received is as long as the one its headers make
// ("NATS/1.0", each "Name: value", the empty line). The client skips a
// line with an empty name, and bytes after the empty line that ends the
// block, without failing; such a block is read again from the stream,
// exactly, and what was skipped is flagged. Only the stream's copy tells
// for sure (lines without a blank after the colon, or ended by LF alone,
// make a block shorter than its headers, and can make up for what the
// client skipped), but reading every block again would cost a request per
// dead letter; a block written as NATS clients write them is read once.
func clientReadWhole(m jetstream.Msg) bool {
	p, ok := m.(pulledMsg)
	if !ok {
		return true
	}
	return p.headerBlockLen() == headerBlockLen(p.m.Header)
}

// rereadStored reads the stored copy of m into r: its header block when
// block, its headers and payload when whole (see records). It reports
// true when m should rather come again later; m is then nak'd. The copy
// must be the message delivered: stored at the same time under the same
// subject. A stream made again since the delivery holds another message
// at that sequence (perhaps of another tenant), whose headers or payload
// must not become this one's: r is then stored as delivered, flagged
// header_block_unavailable or payload_unverified with the reason, as it is
// when the stream no longer holds the message.
//
// When the read fails otherwise, a header block is waited for the first
// few deliveries (maxHeaderRereads; while NATS itself does not answer the
// read, maxWideDeliveries more), then r is stored without it, and so
// it is when m cannot be nak'd because its consumer was made again
// (nobody would deliver it again). A payload is waited for as many
// deliveries (JetStream's count, NumDelivered: a delivery put off for
// the batch's payload budget, or handed back otherwise, counts too), then
// r is stored as delivered, flagged payload_unverified with the last
// read's error (the size the delivery stated lets a message up to
// storedJSONMax be read through JetStream's JSON API when a consumer is
// refused: deliveredAtMost). One whose consumer was made again is left to
// the new consumer, which delivers again whatever its stream holds (stored
// now without its payload, it would keep its row when delivered whole).
func (in *Ingester) rereadStored(ctx context.Context, m jetstream.Msg, r *Received, block, whole bool) bool {
	if block {
		in.metrics.HeaderRereads.Inc()
	}
	st, err := readStoredAtMost(ctx, in.js, r.Stream, r.Seq, false, deliveredAtMost(m, *r, block, whole))
	if err == nil && (!st.Time.Equal(r.Time) || !st.isSubject(r.Subject)) {
		in.log.Warn("the stream holds another message at a dead letter's sequence (it was made again): stored as delivered",
			"stream", r.Stream, "seq", r.Seq, "stored_at", r.Time, "found_stored_at", st.Time, "header_block", block, "payload", whole)
		err = fmt.Errorf("read %s #%d from the stream: it holds another message there (stored %s, on %s), not this one (stored %s, on %s): the stream was made again",
			r.Stream, r.Seq, st.Time.UTC().Format(time.RFC3339Nano), short(st.Subject), r.Time.UTC().Format(time.RFC3339Nano), short(r.Subject))
		r.setUnread(block, whole, err)
		return false
	}
	if err == nil {
		storedSized := bytes.Contains(st.Header, []byte(msgSizeHeader)) || st.Headers[msgSizeHeader] != nil
		if _, sized := r.Header[msgSizeHeader]; whole && (len(st.Data) > 0 || sized && !storedSized) {
			// Only a consumer made headers only delivers so: put it back now.
			in.checkSoon()
		}
		r.setStored(st, block, whole)
		return false
	}
	if errors.Is(err, jetstream.ErrMsgNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		r.setUnread(block, whole, err)
		return false
	}
	if whole {
		if md, mdErr := m.Metadata(); mdErr == nil && md.NumDelivered >= maxHeaderRereads && !waitsOutWide(err, md) && ctx.Err() == nil {
			in.log.Warn("a dead letter that may lack its payload (delivered headers only?) could not be read whole from the stream in its last delivery allowed: stored as delivered, flagged payload_unverified",
				"stream", r.Stream, "seq", r.Seq, "deliveries", md.NumDelivered, "err", err)
			r.setUnread(block, whole, fmt.Errorf("not read whole in %d deliveries; the last read: %w", md.NumDelivered, err))
			return false
		}
		return in.comeAgain(m, r, "reading it whole from the stream failed", err)
	}
	if ctx.Err() == nil {
		if md, mdErr := m.Metadata(); mdErr == nil && (md.NumDelivered < maxHeaderRereads || waitsOutWide(err, md)) {
			if nakErr := m.NakWithDelay(rereadDelay(md.NumDelivered)); !errors.Is(nakErr, errRetired) {
				in.log.Warn("reading a header block again from the stream failed; the dead letter comes again later",
					"stream", r.Stream, "seq", r.Seq, "deliveries", md.NumDelivered, "err", err)
				return true
			}
		}
	}
	r.setUnread(block, false, err)
	return false
}

// deliveredAtMost is the most the stored copy of m (r as received; block
// and whole as rereadStored takes them) can weigh, as its delivery shows
// (readStoredAtMost): its subject, header block and payload as delivered
// when it came with a payload (a consumer made headers only delivers
// none); for one that may lack it, that plus the size its last
// Nats-Msg-Size states (the server's, added after any a producer set),
// when the NATS client read the block whole and no other header holds the
// server's line run in (then the last one may be a producer's, which says
// nothing: payloadUnverified). 0 when that is not known.
func deliveredAtMost(m jetstream.Msg, r Received, block, whole bool) int {
	p, ok := m.(pulledMsg)
	if !ok {
		return 0
	}
	delivered := len(p.m.Subject) + p.headerBlockLen() + len(p.m.Data)
	if !whole {
		return delivered
	}
	vs := r.Header[msgSizeHeader]
	if block || len(vs) == 0 || sizeRunIn(r.Header) {
		return 0
	}
	stated, err := strconv.Atoi(vs[len(vs)-1])
	if err != nil || stated < 0 || stated > math.MaxInt32 {
		return 0
	}
	return delivered + stated
}

// comeAgain naks m, a message that may lack its payload and was not read
// whole (why, err), so that it comes again, and reports true: it is not
// stored now. A message whose consumer was made again is not nak'd: the
// new consumer delivers it again. A read that failed at the message's last
// delivery allowed does not come here (rereadStored stores it flagged), so
// a read that keeps failing naks no message for good.
func (in *Ingester) comeAgain(m jetstream.Msg, r *Received, why string, err error) bool {
	delay := time.Duration(0)
	if err != nil {
		delay = 2 * time.Second
		if md, mdErr := m.Metadata(); mdErr == nil {
			delay = rereadDelay(md.NumDelivered)
		}
	}
	nakErr := m.NakWithDelay(delay)
	switch {
	case errors.Is(nakErr, errRetired):
		in.log.Info("a dead letter that may lack its payload was not read whole and its consumer was made again: left to the new consumer, which delivers it again",
			"stream", r.Stream, "seq", r.Seq, "why", why, "err", err)
	case err != nil:
		in.log.Warn("a dead letter that may lack its payload (delivered headers only?) could not be read whole from the stream; it comes again later, not stored without its payload",
			"stream", r.Stream, "seq", r.Seq, "why", why, "err", err)
	}
	return true
}

// checkSoon asks the monitor to check the consumers now rather than at
// its next tick; asks made while one waits are one.
func (in *Ingester) checkSoon() {
	select {
	case in.recheck <- struct{}{}:
	default:
	}
}

// setStored takes what the stream holds (st) into r: its header block
// when block, its headers and payload when whole. Headers the NATS client
// would read whole are taken as it reads them, so that the row is the one
// a whole delivery makes; others are kept byte for byte (HeaderBlock). A
// message read as a NATS message (st.Headers: too large for JetStream's
// JSON API) was read whole by the client: its headers are taken as read.
func (r *Received) setStored(st *storedMsg, block, whole bool) {
	if st.Headers != nil { // read as the client reads it, whole (readStored)
		if whole {
			r.Data = st.Data
			if r.Data == nil {
				r.Data = []byte{}
			}
		}
		r.Header, r.HeaderBlock = st.Headers, nil
		return
	}
	hdr := st.Header
	if hdr == nil {
		hdr = []byte{} // read: the message has no header block
	}
	if !whole {
		r.HeaderBlock = hdr
		return
	}
	r.Data = st.Data
	if r.Data == nil {
		r.Data = []byte{}
	}
	if h, err := nats.DecodeHeadersMsg(hdr); !block && err == nil && len(hdr) == headerBlockLen(h) {
		r.Header, r.HeaderBlock = h, nil
		return
	}
	if len(hdr) == 0 {
		r.Header = nil // the server's Nats-Msg-Size was all the delivery had
	}
	r.HeaderBlock = hdr
}

// setUnread records why the stored copy of r could not be read: its
// header block (block) and its payload (whole) stay as delivered.
func (r *Received) setUnread(block, whole bool, err error) {
	if block {
		r.HeaderBlockErr = err
	}
	if whole {
		r.PayloadErr = err
	}
}

// received is m as ParseDLQ takes it: where and when JetStream stored it,
// from its metadata; when that cannot be read, the DLQ stream, no sequence
// and the time it arrived, with the reason.
func (in *Ingester) received(m jetstream.Msg) Received {
	r := Received{Subject: m.Subject(), Header: m.Headers(), Data: m.Data(), Stream: in.cfg.Stream, Time: time.Now().UTC()}
	md, err := m.Metadata()
	if err != nil {
		r.MetadataErr = err
		return r
	}
	r.Stream, r.Seq, r.Time = md.Stream, md.Sequence.Stream, md.Timestamp
	return r
}
