package dlq

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
)

// maxHeaderBlock is the largest header block JetStream stores: a
// message with a larger one is refused (error 10097, "header size
// exceeds maximum allowed of 64k").
const maxHeaderBlock = math.MaxUint16

// Budgets of the failure's texts in the dead letter, in bytes as sent
// (escaped, EscapeLines; escaping a tab or a line break doubles it). The
// console searches the first 1,024 characters of an error and shows the
// first 64 KiB of each, but a header block holds 64 KiB in all, the
// original's own headers first: a longer text is cut to its budget, and
// further, to textFloor, when the message would not fit otherwise (fit).
const (
	errorBudget = 8 << 10
	stackBudget = 32 << 10
	textFloor   = 1 << 10
)

// failureTexts are the error and stack trace a dead letter carries, whole
// (as the service gave them: Failure.Err's text and Failure.Stack).
type failureTexts struct {
	errorText, stack string
}

// set writes the texts into h (Dlq-Error, Dlq-Stack), escaped
// (EscapeLines: NATS header values cannot hold line breaks), each cut to
// its budget (bytes as sent), and names each one cut in HeaderCut with the
// length of its whole text, so that the console flags it (cut:error,
// cut:stack) rather than show a part as the whole.
func (t failureTexts) set(h nats.Header, errorBudget, stackBudget int) {
	h.Del(HeaderCut)
	for _, x := range []struct {
		name, text string
		budget     int
	}{{HeaderError, t.errorText, errorBudget}, {HeaderStack, t.stack, stackBudget}} {
		text := strings.TrimRight(x.text, "\r\n")
		if text == "" {
			continue
		}
		escaped := EscapeLines(text)
		v := cutEscaped(escaped, x.budget)
		h.Set(x.name, v)
		if len(v) < len(escaped) {
			h.Add(HeaderCut, x.name+" "+strconv.Itoa(len(text)))
		}
	}
}

// cutEscaped cuts s, text written by EscapeLines, to at most n bytes: at a
// character boundary and not inside an escape (a "\" whose partner is cut
// away would read as another character).
func cutEscaped(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = cut(s, n)
	if slashes := len(s) - len(strings.TrimRight(s, `\`)); slashes%2 == 1 {
		s = s[:len(s)-1]
	}
	return s
}

// retryIDRoom is what Publish's later tries add to the dead letter's
// Nats-Msg-Id (":" and 8 bytes in hex): fit leaves room for it, or a try
// under another id would be over the limits the first one met.
const retryIDRoom = len(":") + 16

// fit makes m, the dead letter of an original that lived at from, one
// the DLQ stream stores and the server takes: a header block of at most
// maxHeaderBlock bytes and, when maxPayload is known (above 0), at most
// maxPayload bytes in all (nats.ErrMaxPayload otherwise). Each step is
// taken only while the message is still over, and each is said in the
// message, so that the console knows what it lacks:
//
//  1. the stack trace, then the error, are cut further, to textFloor each
//     (HeaderCut);
//  2. when the header block is still over, the original's own headers are
//     left out (HeaderLeftOut "headers");
//  3. when the message is still over max_payload, its payload is left out
//     (HeaderLeftOut "payload", with its size and SHA-256), then the
//     original's headers.
//
// What is left is the dead letter's own headers: it fails only when they
// alone are over (an original subject or message id, a consumer or
// principal of tens of KiB), and says so.
func fit(m *nats.Msg, texts failureTexts, maxPayload int64, from Origin) error {
	over := func() int {
		block := headerBlockLen(m.Header) + retryIDRoom
		n := block - maxHeaderBlock
		if maxPayload > 0 {
			n = max(n, block+len(m.Data)-int(min(maxPayload, math.MaxInt32)))
		}
		return n
	}
	if n := over(); n > 0 {
		n += 64 // room for what HeaderCut adds
		stack, errLen := len(m.Header.Get(HeaderStack)), len(m.Header.Get(HeaderError))
		keepStack := max(min(stack, textFloor), stack-n)
		n -= stack - keepStack
		texts.set(m.Header, max(min(errLen, textFloor), errLen-max(n, 0)), keepStack)
	}
	where := originWhere(from)
	// The header block as over counts it (with room for a retry's id):
	// counted without that room, a block within it of the limit kept the
	// original's headers here and lost the payload below, blamed on a
	// max_payload that was not the cause.
	if block := headerBlockLen(m.Header); block+retryIDRoom > maxHeaderBlock {
		leaveOutHeaders(m, fmt.Sprintf("with them the header block would be %d bytes, over the %d JetStream stores; %s", block+retryIDRoom, maxHeaderBlock, where))
	}
	if n := over(); n > 0 && len(m.Data) > 0 && maxPayload > 0 {
		sum := sha256.Sum256(m.Data)
		m.Header.Add(HeaderLeftOut, fmt.Sprintf("payload: its %d bytes (SHA-256 %s) would make the message %d bytes, over the server's max_payload of %d; %s",
			len(m.Data), hex.EncodeToString(sum[:]), headerBlockLen(m.Header)+len(m.Data), maxPayload, where))
		m.Data = nil
	}
	if n := over(); n > 0 {
		leaveOutHeaders(m, fmt.Sprintf("with them the message would be %d bytes, over the server's max_payload of %d; %s", headerBlockLen(m.Header), maxPayload, where))
	}
	if n := over(); n > 0 {
		return fmt.Errorf("the dead letter's own headers (original subject, ids, consumer, principal, error cut to %d bytes) make %d bytes, "+
			"over what the DLQ stream stores (a header block of %d bytes, a message of max_payload %d): shorten them", textFloor, headerBlockLen(m.Header), maxHeaderBlock, maxPayload)
	}
	return nil
}

// originWhere says, for a HeaderLeftOut value, where the original lies.
func originWhere(from Origin) string {
	if from.Stream != "" {
		return fmt.Sprintf("the original is %s #%d (nats stream get %s %d)", from.Stream, from.Seq, from.Stream, from.Seq)
	}
	return "it did not come from a stream"
}

// leaveOutHeaders takes the original's own headers out of m (every one
// but the dead letter's: Dlq-* and its Nats-Msg-Id; the ones
// HeaderUnsendable carries too) and says so in HeaderLeftOut, with why.
// Nothing is said when there were none.
func leaveOutHeaders(m *nats.Msg, why string) {
	n, size := 0, 0
	for k, vs := range m.Header {
		if k == HeaderNatsMsgID || hasFoldPrefix(k, "dlq-") && k != HeaderUnsendable {
			continue
		}
		n += len(vs)
		size += headerBytes(nats.Header{k: vs})
		delete(m.Header, k)
	}
	if n > 0 {
		m.Header.Add(HeaderLeftOut, fmt.Sprintf("headers: the original's own %d headers (%d bytes) are left out: %s", n, size, why))
	}
}
