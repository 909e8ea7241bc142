package dlq

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// originalReadWait bounds Publish's read of an original from its stream.
// NATS does not answer a request whose publish it denies: a service
// without the right to read the stream waits this long, then sends its
// dead letter saying what it could not check.
const originalReadWait = 2 * time.Second

// wholeOriginal returns orig, delivered from where from says, as Publish
// dead-letters it, and what of it could not be known (HeaderLeftOut
// values). A delivery with no payload and a Nats-Msg-Size header does not
// show its message whole: a consumer made headers only delivered it
// without its payload (or its producer set the header on an empty one).
// Stored so, an empty payload would be replayed under the original's
// identity. Such an original is read again from its stream by sequence
// (readStored: the header block exactly as stored, and the payload),
// which takes the right to read the stream's messages
// ($JS.API.STREAM.MSG.GET.<stream>; on a server whose max_payload is over
// storedJSONMax, $JS.API.DIRECT.GET.<stream> or a consumer of its own
// too). A block the client cannot read is read leniently (ParseHeaderBlock:
// the lines it can), and said so ("header_block"): what was skipped would
// be missing from a replay. When the read fails, or finds another message
// at that sequence (the stream made again), the delivery is dead-lettered
// as it came, saying its payload is missing.
//
// So is a delivery with neither headers nor payload: a consumer made
// headers only delivers a message whose header block the client cannot
// read so, its Nats-Msg-Size lost with the block (such empty messages are
// rare, the read cheap); when the read fails it is taken as it came.
//
// A delivery with no headers and a payload is taken as it came: the message had
// none (most messages), or the NATS client could not read its header
// block and delivered it without one (it tells only the connection's
// error handler, ErrBadHeaderMsg). Reading every such original again
// would cost every dead letter of a message without headers a read, and a
// service without the right to read its stream a 2 s wait and a dead
// letter that can never be replayed; a block the client cannot read comes
// only from a client that is not NATS's, and the dead letter then goes
// under the id derived from where it lived.
func wholeOriginal(ctx context.Context, js jetstream.JetStream, orig jetstream.Msg, from Origin) (*nats.Msg, []string) {
	m := &nats.Msg{Subject: orig.Subject(), Header: orig.Headers(), Data: orig.Data()}
	_, sized := m.Header[msgSizeHeader]
	bare := len(m.Header) == 0 // headers only, as a block the client could not read: no Nats-Msg-Size either
	if from.Stream == "" || len(m.Data) > 0 || !sized && !bare {
		return m, nil
	}
	rctx, cancel := context.WithTimeout(ctx, originalReadWait)
	defer cancel()
	where := fmt.Sprintf("%s #%d", from.Stream, from.Seq)
	st, err := readStored(rctx, js, from.Stream, from.Seq, false)
	if err == nil && (!st.Time.Equal(from.Time) || !st.isSubject(m.Subject)) {
		err = fmt.Errorf("the stream holds another message there (stored %s): it was made again", st.Time.UTC().Format(time.RFC3339Nano))
	}
	if err != nil && bare {
		return m, nil // most likely an empty message: taken as it came
	}
	if err != nil {
		return m, []string{fmt.Sprintf("payload: delivered without it, with %s %s, as a consumer made headers only delivers a message, and reading the original %s failed: %v",
			msgSizeHeader, short(m.Header.Get(msgSizeHeader)), where, err)}
	}
	m.Data = st.Data
	var left []string
	switch {
	case st.Headers != nil: // read as the client reads it, whole (readStored)
		m.Header = st.Headers
	case len(st.Header) == 0:
		m.Header = nil
	default:
		h, err := nats.DecodeHeadersMsg(st.Header)
		if err != nil {
			lenient, problems := ParseHeaderBlock(st.Header)
			h = lenient
			left = append(left, fmt.Sprintf("header_block: the NATS client could not read the original's header block (%d bytes); read again from %s, and read leniently: %s",
				len(st.Header), where, strings.Join(problems, "; ")))
		}
		m.Header = h
	}
	return m, left
}
