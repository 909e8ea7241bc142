package dlq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// rereadConcurrency bounds the header blocks read again from the stream at
// once for one batch.
const rereadConcurrency = 8

// records turns a batch into records. A DLQ message that arrived with a
// header block the NATS client could not read, or did not read whole
// (clientReadWhole), has its header block read again from the stream,
// exactly as stored; one that arrived with no block at all (none sent) is
// not read again. When that read fails for a reason other than the message
// being gone, the message is left for a later delivery (at most
// maxHeaderRereads times) rather than stored without its headers; records
// returns the batch without it.
func (in *Ingester) records(ctx context.Context, batch []item) ([]item, []Record) {
	recvd := make([]Received, len(batch))
	later := make([]bool, len(batch))
	var wg sync.WaitGroup
	sem := make(chan struct{}, rereadConcurrency)
	for i, it := range batch {
		if it.rec != nil {
			continue
		}
		recvd[i] = in.received(it.msg)
		if (recvd[i].Header != nil && clientReadWhole(it.msg)) || recvd[i].MetadataErr != nil {
			continue
		}
		if p, ok := it.msg.(pulledMsg); ok && p.headerBlockLen() == 0 {
			recvd[i].HeaderBlock = []byte{} // it came with none: nothing to read again
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			later[i] = in.rereadHeaderBlock(ctx, it.msg, &recvd[i])
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
	return p.headerBlockLen() == len(headerVersion)+4+headerBytes(p.m.Header)
}

// rereadHeaderBlock reads the stored copy of m's header block into r. It
// reports true when m should rather come again later (the read failed, not
// for the first few deliveries); m is then nak'd. The copy must be the
// message delivered: stored at the same time under the same subject. A
// stream made again since the delivery holds another message at that
// sequence (perhaps of another tenant), whose headers must not become this
// one's: r is then stored without them, flagged header_block_unavailable
// with the reason, and so it is too when the read fails and m cannot be
// nak'd because its consumer was made again (nobody would deliver it again).
func (in *Ingester) rereadHeaderBlock(ctx context.Context, m jetstream.Msg, r *Received) bool {
	in.metrics.HeaderRereads.Inc()
	st, err := readStored(ctx, in.js, r.Stream, r.Seq, false)
	if err == nil && (!st.Time.Equal(r.Time) || !st.isSubject(r.Subject)) {
		in.log.Warn("the stream holds another message at a dead letter's sequence (it was made again): stored without its header block",
			"stream", r.Stream, "seq", r.Seq, "stored_at", r.Time, "found_stored_at", st.Time)
		r.HeaderBlockErr = fmt.Errorf("read %s #%d from the stream: it holds another message there (stored %s, on %s), not this one (stored %s, on %s): the stream was made again",
			r.Stream, r.Seq, st.Time.UTC().Format(time.RFC3339Nano), short(st.Subject), r.Time.UTC().Format(time.RFC3339Nano), short(r.Subject))
		return false
	}
	if err == nil {
		r.HeaderBlock = st.Header
		if r.HeaderBlock == nil {
			r.HeaderBlock = []byte{} // read: the message has no header block
		}
		return false
	}
	if ctx.Err() == nil && !errors.Is(err, jetstream.ErrMsgNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
		if md, mdErr := m.Metadata(); mdErr == nil && md.NumDelivered < maxHeaderRereads {
			if nakErr := m.NakWithDelay(2 * time.Second); !errors.Is(nakErr, errRetired) {
				in.log.Warn("reading a header block again from the stream failed; the dead letter comes again later",
					"stream", r.Stream, "seq", r.Seq, "deliveries", md.NumDelivered, "err", err)
				return true
			}
		}
	}
	r.HeaderBlockErr = err
	return false
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
