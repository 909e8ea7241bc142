package audit

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
)

// ErrChainBroken is returned by Result.Err when verification found a bad
// entry, a checkpoint that does not match or verify, or a failed anchor.
var ErrChainBroken = errors.New("audit chain broken")

// Anchor is a head recorded outside the database (from an earlier verify or
// export): the entry at Seq must still have Hash.
type Anchor struct {
	Seq  int64
	Hash []byte
}

// ParseAnchor reads "seq:hash", with the hash in hex, as verify prints heads.
func ParseAnchor(s string) (Anchor, error) {
	seqText, hashText, ok := strings.Cut(strings.TrimSpace(s), ":")
	seq, err := strconv.ParseInt(seqText, 10, 64)
	if !ok || err != nil || seq < 1 {
		return Anchor{}, quarantine.Errorf(quarantine.EINVALID, "anchor %q is not seq:hash, like 1234:9f86d0...", s)
	}
	hash, err := hex.DecodeString(hashText)
	if err != nil || len(hash) != 32 {
		return Anchor{}, quarantine.Errorf(quarantine.EINVALID, "anchor %q: the hash must be 64 hex digits", s)
	}
	return Anchor{Seq: seq, Hash: hash}, nil
}

// VerifyOptions are what a verification checks besides the chain itself.
type VerifyOptions struct {
	// Keys are the public keys checkpoints may be signed with. Without any,
	// a log that has checkpoints does not verify: a signature nobody checks
	// anchors nothing.
	Keys *KeySet
	// Anchors are heads kept elsewhere that the chain must still contain.
	Anchors []Anchor
}

// Result is what Verify found.
type Result struct {
	Rows     int64  // entries read, including the bad one if any
	HeadSeq  int64  // seq of the last entry that verified; 0 when none did
	Head     []byte // hash of that entry; nil when none did
	FirstBad int64  // seq of the first bad entry (a missing one counts); 0 when the chain is intact
	Problem  string // what is wrong with FirstBad, as a sentence that starts "seq N: " or "checkpoint at seq N: "
	// Checkpoints is how many checkpoints matched the chain and verified.
	Checkpoints int
	// LastCheckpoint is the newest of them (Seq 0 when none).
	LastCheckpoint Checkpoint
	// Anchors is how many anchors matched.
	Anchors int
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
// hash to record elsewhere, and what the checkpoints cover.
func (r Result) String() string {
	switch {
	case !r.OK() && r.HeadSeq == 0:
		return fmt.Sprintf("audit chain BROKEN: %s; no entry before it verifies", r.Problem)
	case !r.OK():
		return fmt.Sprintf("audit chain BROKEN: %s; entries 1..%d verify, their head hash is %s", r.Problem, r.HeadSeq, r.HeadHex())
	case r.Rows == 0:
		return "audit chain ok: no entries yet"
	}
	s := fmt.Sprintf("audit chain ok: %s, head seq %d hash %s", plural(r.Rows, "entry", "entries"), r.HeadSeq, r.HeadHex())
	if r.Checkpoints == 0 {
		s += "; no signed checkpoint yet"
	} else {
		verify := " verify, the last"
		if r.Checkpoints == 1 {
			verify = " verifies, the last"
		}
		s += fmt.Sprintf("; %s%s at seq %d (%s, key %s)", plural(int64(r.Checkpoints), "signed checkpoint", "signed checkpoints"), verify,
			r.LastCheckpoint.Seq, r.LastCheckpoint.At.Format(timeLayout), r.LastCheckpoint.KeyID)
		if n := r.HeadSeq - r.LastCheckpoint.Seq; n > 0 {
			s += fmt.Sprintf(", %s after it not yet signed", plural(n, "entry", "entries"))
		}
	}
	if r.Anchors > 0 {
		s += fmt.Sprintf("; %s", plural(int64(r.Anchors), "anchor matches", "anchors match"))
	}
	return s
}

// plural is "1 entry", "3 entries".
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

const (
	verifyEntries     = `SELECT ` + entryColumns + ` FROM audit_log ORDER BY seq`
	verifyCheckpoints = `SELECT ` + checkpointColumns + ` FROM audit_checkpoints ORDER BY seq`
)

// Verify walks the whole chain in seq order, streaming it from one query
// (one snapshot; memory does not grow with the log), and checks that seqs run
// 1, 2, 3, ... without gaps, that each prev_hash is the hash of the entry
// before, and that each hash matches the entry's contents. It also checks
// every checkpoint: its signature with opts.Keys, and that the entry at its
// seq has its hash; and every anchor in opts.Anchors the same way. A log
// truncated and rebuilt with fresh hashes after a checkpoint or an anchor
// fails here; a log whose checkpoints were removed as well is caught only by
// an anchor (or by noticing that the checkpoints stopped).
//
// It stops at the first problem and reports it in the Result; the error is
// only for failing to read. Checkpoints are read first and kept in memory
// (about 150 bytes each).
func Verify(ctx context.Context, db Querier, opts VerifyOptions) (Result, error) {
	rows, err := db.Query(ctx, verifyCheckpoints)
	if err != nil {
		return Result{}, fmt.Errorf("verify audit chain: read checkpoints: %w", err)
	}
	cps, err := pgx.CollectRows(rows, scanCheckpoint)
	if err != nil {
		return Result{}, fmt.Errorf("verify audit chain: read checkpoints: %w", err)
	}
	v := verifier{opts: opts, checkpoints: cps, anchors: sortedAnchors(opts.Anchors)}
	rows, err = db.Query(ctx, verifyEntries)
	if err != nil {
		return Result{}, fmt.Errorf("verify audit chain: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return Result{}, fmt.Errorf("verify audit chain after seq %d: %w", v.res.HeadSeq, err)
		}
		if !v.entry(&e) {
			break // the rest of the chain hangs off a broken link
		}
	}
	if err := rows.Err(); err != nil {
		return Result{}, fmt.Errorf("verify audit chain after seq %d: %w", v.res.HeadSeq, err)
	}
	v.finish()
	return v.res, nil
}

// verifier is one walk of the chain.
type verifier struct {
	opts        VerifyOptions
	checkpoints []Checkpoint // ascending seq, not yet reached
	anchors     []Anchor     // ascending seq, not yet reached
	res         Result
	// trusted is the newest entry a checkpoint or an anchor vouched for:
	// when a later one fails, only entries up to it are known good.
	trustedSeq  int64
	trustedHash []byte
}

func sortedAnchors(in []Anchor) []Anchor {
	out := slices.Clone(in)
	slices.SortFunc(out, func(a, b Anchor) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}

func (v *verifier) fail(seq int64, format string, args ...any) bool {
	v.res.FirstBad = seq
	v.res.Problem = fmt.Sprintf(format, args...)
	return false
}

// failSigned reports a checkpoint or anchor that does not hold: the links
// may all be sound, but only the entries up to the last head that did hold
// can be trusted.
func (v *verifier) failSigned(seq int64, format string, args ...any) bool {
	v.res.HeadSeq, v.res.Head = v.trustedSeq, v.trustedHash
	return v.fail(seq, format, args...)
}

// entry checks one entry; false stops the walk.
func (v *verifier) entry(e *Entry) bool {
	r := &v.res
	r.Rows++
	want := r.HeadSeq + 1
	switch {
	case e.Seq != want && want == 1:
		return v.fail(1, "seq 1: missing, the log starts at seq %d (deleted rows)", e.Seq)
	case e.Seq != want:
		return v.fail(want, "seq %d: missing, seq %d is followed by seq %d (deleted row)", want, r.HeadSeq, e.Seq)
	case e.Seq == 1 && e.PrevHash != nil:
		return v.fail(1, "seq 1: has a prev_hash, but the first entry has none (edited row)")
	case e.Seq > 1 && !bytes.Equal(e.PrevHash, r.Head):
		return v.fail(e.Seq, "seq %d: prev_hash does not match seq %d (one of the two was rewritten)", e.Seq, r.HeadSeq)
	case !bytes.Equal(hashEntry(e), e.Hash):
		return v.fail(e.Seq, "seq %d: hash does not match its contents (edited row)", e.Seq)
	}
	r.HeadSeq, r.Head = e.Seq, e.Hash
	for len(v.checkpoints) > 0 && v.checkpoints[0].Seq == e.Seq {
		cp := v.checkpoints[0]
		v.checkpoints = v.checkpoints[1:]
		if !bytes.Equal(cp.Hash, e.Hash) {
			return v.failSigned(e.Seq, "checkpoint at seq %d: the signed hash %s is not the entry's %s (the log was rewritten at or before seq %d)",
				e.Seq, cp.HashHex(), e.HashHex(), e.Seq)
		}
		if v.opts.Keys.Len() == 0 {
			return v.failSigned(e.Seq, "checkpoint at seq %d: no public key was given to check its signature (key %s)", e.Seq, cp.KeyID)
		}
		if err := cp.VerifySignature(v.opts.Keys); err != nil {
			return v.failSigned(e.Seq, "checkpoint at seq %d: %v", e.Seq, err)
		}
		r.Checkpoints++
		r.LastCheckpoint = cp
		v.trustedSeq, v.trustedHash = e.Seq, e.Hash
	}
	for len(v.anchors) > 0 && v.anchors[0].Seq == e.Seq {
		a := v.anchors[0]
		v.anchors = v.anchors[1:]
		if !bytes.Equal(a.Hash, e.Hash) {
			return v.failSigned(e.Seq, "anchor at seq %d: the entry's hash is %s, not %s (the log was rewritten at or before seq %d)",
				e.Seq, e.HashHex(), hex.EncodeToString(a.Hash), e.Seq)
		}
		r.Anchors++
		v.trustedSeq, v.trustedHash = e.Seq, e.Hash
	}
	return true
}

// finish reports checkpoints and anchors past the end of an intact chain:
// entries were removed from its tail.
func (v *verifier) finish() {
	if !v.res.OK() {
		return
	}
	if len(v.checkpoints) > 0 && v.checkpoints[0].Seq > v.res.HeadSeq {
		v.failSigned(v.checkpoints[0].Seq, "checkpoint at seq %d: the log ends at seq %d (entries were removed from its end)",
			v.checkpoints[0].Seq, v.res.HeadSeq)
		return
	}
	if len(v.anchors) > 0 {
		v.failSigned(v.anchors[0].Seq, "anchor at seq %d: the log ends at seq %d (entries were removed from its end)",
			v.anchors[0].Seq, v.res.HeadSeq)
	}
}
