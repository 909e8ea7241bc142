package audit

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
)

// ErrChainBroken is returned by Result.Err when verification found a bad
// entry.
var ErrChainBroken = errors.New("audit chain broken")

// Result is what Verify found.
type Result struct {
	Rows     int64  // entries read, including the bad one if any
	HeadSeq  int64  // seq of the last entry that verified; 0 when none did
	Head     []byte // hash of that entry; nil when none did
	FirstBad int64  // seq of the first bad entry (a missing one counts); 0 when the chain is intact
	Problem  string // what is wrong with FirstBad, as a sentence that starts "seq N: "
}

// OK reports whether the whole chain verified.
func (r Result) OK() bool { return r.FirstBad == 0 }

// HeadHex returns Head in lowercase hex ("" for an empty log).
func (r Result) HeadHex() string { return hex.EncodeToString(r.Head) }

// Err returns nil for an intact chain, else an error wrapping ErrChainBroken
// that names the first bad seq.
func (r Result) Err() error {
	if r.OK() {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrChainBroken, r.Problem)
}

// String describes the result in one line for an operator, with the head
// hash to record elsewhere.
func (r Result) String() string {
	switch {
	case !r.OK() && r.HeadSeq == 0:
		return fmt.Sprintf("audit chain BROKEN: %s; no entry before it verifies", r.Problem)
	case !r.OK():
		return fmt.Sprintf("audit chain BROKEN: %s; entries 1..%d verify, their head hash is %s", r.Problem, r.HeadSeq, r.HeadHex())
	case r.Rows == 0:
		return "audit chain ok: no entries yet"
	default:
		return fmt.Sprintf("audit chain ok: %d entries, head seq %d hash %s", r.Rows, r.HeadSeq, r.HeadHex())
	}
}

const verifyEntries = `SELECT ` + entryColumns + ` FROM audit_log ORDER BY seq`

// Verify walks the whole chain in seq order, streaming it from one query
// (one snapshot; memory does not grow with the log), and checks that seqs run
// 1, 2, 3, ... without gaps, that each prev_hash is the hash of the entry
// before, and that each hash matches the entry's contents. It stops at the
// first bad entry and reports it in the Result; the error is only for failing
// to read. A removed tail cannot be seen this way: compare Head with a head
// recorded earlier.
func Verify(ctx context.Context, db Querier) (Result, error) {
	rows, err := db.Query(ctx, verifyEntries)
	if err != nil {
		return Result{}, fmt.Errorf("verify audit chain: %w", err)
	}
	defer rows.Close()
	var res Result
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return Result{}, fmt.Errorf("verify audit chain after seq %d: %w", res.HeadSeq, err)
		}
		res.Rows++
		want := res.HeadSeq + 1
		switch {
		case e.Seq != want && want == 1:
			res.FirstBad = 1
			res.Problem = fmt.Sprintf("seq 1: missing, the log starts at seq %d (deleted rows)", e.Seq)
		case e.Seq != want:
			res.FirstBad = want
			res.Problem = fmt.Sprintf("seq %d: missing, seq %d is followed by seq %d (deleted row)", want, res.HeadSeq, e.Seq)
		case e.Seq == 1 && e.PrevHash != nil:
			res.FirstBad = 1
			res.Problem = "seq 1: has a prev_hash, but the first entry has none (edited row)"
		case e.Seq > 1 && !bytes.Equal(e.PrevHash, res.Head):
			res.FirstBad = e.Seq
			res.Problem = fmt.Sprintf("seq %d: prev_hash does not match seq %d (one of the two was rewritten)", e.Seq, res.HeadSeq)
		case !bytes.Equal(hashEntry(&e), e.Hash):
			res.FirstBad = e.Seq
			res.Problem = fmt.Sprintf("seq %d: hash does not match its contents (edited row)", e.Seq)
		default:
			res.HeadSeq, res.Head = e.Seq, e.Hash
			continue
		}
		// The rest of the chain hangs off a broken link: stop here.
		break
	}
	if err := rows.Err(); err != nil {
		return Result{}, fmt.Errorf("verify audit chain after seq %d: %w", res.HeadSeq, err)
	}
	return res, nil
}
