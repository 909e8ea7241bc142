package dlq

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// storedMsg is a message read back from a stream through the JetStream
// API's JSON form, which carries the header block exactly as the stream
// stored it. (The client's Stream.GetMsg parses that block and fails on one
// it cannot read; a consumer's message arrives with no headers at all then.)
type storedMsg struct {
	Subject string    `json:"subject"`
	Seq     uint64    `json:"seq"`
	Header  []byte    `json:"hdrs"`
	Data    []byte    `json:"data"`
	Time    time.Time `json:"time"`
}

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
// jetstream.ErrMsgNotFound when there is none.
func readStored(ctx context.Context, js jetstream.JetStream, stream string, seq uint64, next bool) (*storedMsg, error) {
	req := storedMsgRequest{Seq: seq}
	if next {
		req.NextFor = ">"
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
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
