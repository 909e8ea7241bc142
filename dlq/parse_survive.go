package dlq

import (
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// parseFault, when set (tests only), runs at the start of every parse of
// a message: a parser that panics on it, which no input is known to make.
var parseFault atomic.Pointer[func(Received)]

// parserPanic is what the parser panicked with on a message (survive).
type parserPanic struct{ v any }

func (p parserPanic) Error() string { return fmt.Sprint(p.v) }

// survive makes a panic of the parser on m (kind: which parser) m's
// record (*r): its raw form (RawForm: every byte received kept as bytes,
// never replayed), in tenant unknown, since nothing the parser read of it
// can be trusted (the subject's tenant token included), flagged
// parse_failed with where it failed. Without it the one message stopped
// the ingest process, and every process that took it after it, at every
// redelivery: a hostile dead letter must cost its own record, never the
// others' (review round 42). A test sets parseFault to make the parser
// panic.
func survive(kind string, m Received, r *Record) {
	v := recover()
	if v == nil {
		return
	}
	var f Record
	f.SourceKind, f.SourceStream, f.SourceSeq, f.DeadLetteredAt = kind, m.Stream, m.Seq, m.Time
	f.setDelivery(m)
	f.Tenant, f.ItemType, f.Subject, f.HeaderBlock, f.Payload = UnknownTenant, UnknownTenant, m.Subject, m.HeaderBlock, m.Data
	if f.HeaderBlock == nil && len(m.Header) > 0 {
		f.Headers = encodeHeaders(m.Header)
	}
	*r = RawForm(f, parserPanic{v})
	r.checkStoredAt(time.Now()) // as the parser does: a day no partition is kept for would make it unstorable
	r.flag("parse_failed", "the parser failed on this dead letter; stored in its raw form, in tenant unknown; report it with where it failed: %s",
		cut(CleanText(string(debug.Stack())), 2000))
}
