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
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
)

// ErrChainBroken is returned by Result.Err when verification found a bad
// entry, a checkpoint that does not match or verify, or a failed anchor.
var ErrChainBroken = errors.New("audit chain broken")

// ErrNotChecked is returned by Result.Err (and ExportResult.Err) when
// nothing wrong was found but a check could not be made: signatures were
// there to check and no public key was given. It says nothing of
// tampering either way, and must not be taken for ErrChainBroken.
var ErrNotChecked = errors.New("audit chain not checked")

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
	// anchors nothing. That is a check not made (Result.Unchecked), not a
	// finding: what can be told without a key (an edited or missing entry,
	// a checkpoint whose hash the chain no longer has) is still reported.
	Keys *KeySet
	// Anchors are heads kept elsewhere that the chain must still contain.
	Anchors []Anchor
}

// maxProblems bounds Result.Problems; ProblemCount counts them all.
const maxProblems = 20

// Result is what Verify found.
type Result struct {
	Rows     int64  // entries read
	HeadSeq  int64  // seq of the last entry that verified before the first problem; 0 when none did
	Head     []byte // hash of that entry; nil when none did
	FirstBad int64  // seq of the first problem (a missing entry counts); 0 when the chain is intact
	Problem  string // the first problem, as a sentence that starts "seq N: " or "checkpoint at seq N: "
	// Problems are the problems found, in seq order as the walk met them
	// (the first maxProblems): the walk goes on after one, checking each
	// entry against the one before it as stored, so an edit made after a
	// broken link is still reported. ProblemCount counts all of them.
	Problems     []string
	ProblemCount int64
	// Linked is the seq up to which every entry linked and hashed
	// correctly, whether or not a checkpoint vouched for it.
	Linked int64
	// Warnings are findings that do not break the chain: a checkpoint whose
	// signature does not verify, followed by a later one that does (it
	// vouches for every entry up to it, so the bad one anchors nothing and
	// is a forgery to look into).
	Warnings []string
	// Checkpoints is how many checkpoints matched the chain and verified.
	Checkpoints int
	// LastCheckpoint is the newest of them (Seq 0 when none).
	LastCheckpoint Checkpoint
	// UnsignedSince is the at of the first entry after LastCheckpoint (of
	// the first entry when no checkpoint verified); zero when every entry
	// is signed.
	UnsignedSince time.Time
	// Anchors is how many anchors matched.
	Anchors int
	// Unchecked says what could not be checked, "" when every check was
	// made: the signatures of the checkpoints that match the chain, when
	// no public key was given. Such a checkpoint vouches for nothing, but
	// nothing says it is forged either, so it is no problem of the chain.
	Unchecked string
	// signed: the first problem is a checkpoint or an anchor, not an entry.
	signed bool
}

// OK reports whether the whole chain verified: nothing is wrong, and
// every check was made (Unchecked is empty).
func (r Result) OK() bool { return r.FirstBad == 0 && r.Unchecked == "" }

// Broken reports whether verification found a problem (FirstBad).
func (r Result) Broken() bool { return r.FirstBad != 0 }

// HeadHex returns Head in lowercase hex ("" for an empty log).
func (r Result) HeadHex() string { return hex.EncodeToString(r.Head) }

// Err returns nil for an intact chain, an error wrapping ErrChainBroken
// that names the first bad seq when a problem was found, else, when a
// check could not be made, one wrapping ErrNotChecked that says which.
func (r Result) Err() error {
	switch {
	case r.Broken():
		return fmt.Errorf("%w: %s", ErrChainBroken, r.Problem)
	case r.Unchecked != "":
		return fmt.Errorf("%w: %s", ErrNotChecked, r.Unchecked)
	}
	return nil
}

// String describes the result in one line for an operator, with the head
// hash to record elsewhere, and what the checkpoints cover. Problems after
// the first and Warnings are not in it: print them on lines of their own
// (through Printable, as String is: what a terminal may show).
func (r Result) String() string { return Printable(r.text()) }

func (r Result) text() string {
	more := ""
	if r.ProblemCount > 1 {
		more = fmt.Sprintf(" (%s in all)", plural(r.ProblemCount, "problem", "problems"))
	}
	if r.Broken() && r.Unchecked != "" {
		// The problems stand without a key; say what else was not looked at.
		more += " (besides, " + r.Unchecked + ")"
	}
	switch {
	case r.Broken() && r.HeadSeq == 0 && r.signed && r.Linked > 0:
		return fmt.Sprintf("audit chain BROKEN: %s%s; entries 1..%d link and hash correctly, but no checkpoint or anchor before it vouches for them",
			r.Problem, more, r.Linked)
	case r.Broken() && r.HeadSeq == 0:
		return fmt.Sprintf("audit chain BROKEN: %s%s; no entry before it verifies", r.Problem, more)
	case r.Broken():
		return fmt.Sprintf("audit chain BROKEN: %s%s; entries 1..%d verify, their head hash is %s", r.Problem, more, r.HeadSeq, r.HeadHex())
	case r.Unchecked != "":
		return fmt.Sprintf("audit chain NOT CHECKED: %s; nothing else is wrong: %s link and hash correctly, head seq %d hash %s, but nothing signed vouches for them",
			r.Unchecked, plural(r.Rows, "entry", "entries"), r.HeadSeq, r.HeadHex())
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
	if len(r.Warnings) > 0 {
		s += fmt.Sprintf("; %s", plural(int64(len(r.Warnings)), "warning", "warnings"))
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
// before, that each hash matches the entry's contents (and, from hash
// version 3, that its stored content digest does), that no entry is
// dated before the entry before it (appends take the database clock under
// the chain's lock and never go back, see Append), and that no entry of
// hash version 1 or 2 follows one of version 3. It also checks every
// checkpoint: its signature with opts.Keys, and that the entry at its seq
// has its hash; and every anchor in opts.Anchors the same way. A log
// truncated and rebuilt with fresh hashes after a checkpoint or an anchor
// fails here; a log cut back to an earlier signed head, its newer
// checkpoints removed as well, is caught only by an anchor: what is left
// verifies, and the console signs on from there (the Checkpointer logs
// each signed head, and CheckpointCollector exports its seq, for that).
//
// A checkpoint whose signature does not verify breaks the chain, unless a
// later checkpoint verifies with no problem between them: that one vouches
// for every entry up to it, so the bad one is reported in
// Result.Warnings (someone with the runtime role's credentials inserted
// it) instead.
//
// It does not stop at the first problem: it goes on checking each entry
// against the one before it as stored, and reports every problem (see
// Result.Problems). The error is only for failing to read. Checkpoints are
// read first and kept in memory (about 150 bytes each).
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
			return Result{}, fmt.Errorf("verify audit chain after seq %d: %w", v.last.Seq, err)
		}
		v.entry(&e)
	}
	if err := rows.Err(); err != nil {
		return Result{}, fmt.Errorf("verify audit chain after seq %d: %w", v.last.Seq, err)
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
	// last is the entry read before this one, as stored (zero before the
	// first): each entry is checked against it, whether or not it verified.
	last Entry
	// broken: a problem was found; HeadSeq no longer moves. linkBroken: an
	// entry was bad; Linked no longer moves.
	broken, linkBroken bool
	// trusted is the newest entry a checkpoint or an anchor vouched for:
	// when a later one fails, only entries up to it are known good.
	trustedSeq  int64
	trustedHash []byte
	// unverified are checkpoints whose signature failed, waiting for a later
	// one that verifies; trustedSeq and trustedHash as they were then.
	unverified []unverifiedCheckpoint
	// unchecked counts the checkpoints that match the chain but whose
	// signature was not checked (no key was given); newestUnchecked is the
	// last of them.
	unchecked       int
	newestUnchecked Checkpoint
}

type unverifiedCheckpoint struct {
	seq, trustedSeq int64
	trustedHash     []byte
	problem         string
}

func sortedAnchors(in []Anchor) []Anchor {
	out := slices.Clone(in)
	slices.SortFunc(out, func(a, b Anchor) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}

// fail records a problem at seq.
func (v *verifier) fail(seq int64, format string, args ...any) {
	r := &v.res
	problem := fmt.Sprintf(format, args...)
	r.ProblemCount++
	if len(r.Problems) < maxProblems {
		r.Problems = append(r.Problems, problem)
	}
	if r.FirstBad == 0 || seq < r.FirstBad {
		r.FirstBad, r.Problem = seq, problem
	}
	v.broken = true
}

// failSigned records a checkpoint or anchor that does not hold: the links
// may all be sound, but only the entries up to the last head that did hold
// can be trusted.
func (v *verifier) failSigned(seq, trustedSeq int64, trustedHash []byte, format string, args ...any) {
	first := v.res.FirstBad == 0 || seq < v.res.FirstBad
	if first || trustedSeq < v.res.HeadSeq {
		v.res.HeadSeq, v.res.Head = trustedSeq, trustedHash
	}
	v.fail(seq, format, args...)
	if first {
		v.res.signed = true
	}
}

// entry checks one entry against the one before it.
func (v *verifier) entry(e *Entry) {
	r := &v.res
	r.Rows++
	ok := true
	want := v.last.Seq + 1
	switch {
	case e.Seq != want && want == 1:
		v.fail(1, "seq 1: missing, the log starts at seq %d (deleted rows)", e.Seq)
		ok = false
	case e.Seq != want:
		v.fail(want, "seq %d: missing, seq %d is followed by seq %d (deleted row)", want, v.last.Seq, e.Seq)
		ok = false
	case e.Seq == 1 && e.PrevHash != nil:
		v.fail(1, "seq 1: has a prev_hash, but the first entry has none (edited row)")
		ok = false
	case e.Seq > 1 && !bytes.Equal(e.PrevHash, v.last.Hash):
		v.fail(e.Seq, "seq %d: prev_hash does not match seq %d (one of the two was rewritten)", e.Seq, v.last.Seq)
		ok = false
	}
	if !bytes.Equal(hashEntry(e), e.Hash) {
		v.fail(e.Seq, "seq %d: hash does not match its contents (edited row)", e.Seq)
		ok = false
	} else if e.HashVersion >= firstDigestVersion && !bytes.Equal(contentDigest(e), e.ContentDigest) {
		// What an export shows of an entry it leaves out: it must be the
		// digest the hash covers, or the stub would not re-hash.
		v.fail(e.Seq, "seq %d: content_digest is not the digest of its contents (edited row)", e.Seq)
		ok = false
	}
	if v.last.Seq > 0 && e.At.Before(v.last.At) {
		v.fail(e.Seq, "seq %d: dated %s, before seq %d (%s): entries are appended in time order (backdated or edited row)",
			e.Seq, e.At.Format(timeLayout), v.last.Seq, v.last.At.Format(timeLayout))
		ok = false
	}
	if v.last.Seq > 0 && v.last.HashVersion >= firstDigestVersion && e.HashVersion < firstDigestVersion {
		v.fail(e.Seq, "seq %d: hash version %d after version %d of seq %d: versions never go back along the chain (inserted row)",
			e.Seq, e.HashVersion, v.last.HashVersion, v.last.Seq)
		ok = false
	}
	if ok && !v.broken {
		r.HeadSeq, r.Head = e.Seq, e.Hash
	}
	if ok && !v.linkBroken {
		r.Linked = e.Seq
	}
	v.linkBroken = v.linkBroken || !ok
	if e.Seq == r.LastCheckpoint.Seq+1 {
		r.UnsignedSince = e.At
	}
	v.last = *e
	v.checkpointsAt(e)
	v.anchorsAt(e)
}

// checkpointsAt checks the checkpoints at e's seq, and reports those at
// seqs the walk passed over (the entry is missing).
func (v *verifier) checkpointsAt(e *Entry) {
	r := &v.res
	for len(v.checkpoints) > 0 && v.checkpoints[0].Seq <= e.Seq {
		cp := v.checkpoints[0]
		v.checkpoints = v.checkpoints[1:]
		switch {
		case cp.Seq < e.Seq:
			v.failSigned(cp.Seq, v.trustedSeq, v.trustedHash, "checkpoint at seq %d: the log has no entry at that seq (deleted row)", cp.Seq)
			continue
		case !bytes.Equal(cp.Hash, e.Hash):
			v.failSigned(e.Seq, v.trustedSeq, v.trustedHash, "checkpoint at seq %d: the signed hash %s is not the entry's %s (the log was rewritten at or before seq %d)",
				e.Seq, cp.HashHex(), e.HashHex(), e.Seq)
			continue
		case v.opts.Keys.Len() == 0:
			// A signature nobody can check is a check not made, not a
			// forgery: it vouches for nothing (trustedSeq stays), and
			// finish says so in Result.Unchecked.
			v.unchecked++
			v.newestUnchecked = cp
			continue
		}
		if err := cp.VerifySignature(v.opts.Keys); err != nil {
			v.unverified = append(v.unverified, unverifiedCheckpoint{seq: e.Seq, trustedSeq: v.trustedSeq, trustedHash: v.trustedHash,
				problem: fmt.Sprintf("checkpoint at seq %d: %v", e.Seq, err)})
			continue
		}
		r.Checkpoints++
		r.LastCheckpoint, r.UnsignedSince = cp, time.Time{}
		if v.broken {
			continue // it vouches for nothing before a broken link
		}
		v.trustedSeq, v.trustedHash = e.Seq, e.Hash
		for _, u := range v.unverified {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s; the checkpoint at seq %d verifies and vouches for the entries up to it, so this one anchors nothing (inserted by someone with the database's credentials?)",
				u.problem, e.Seq))
		}
		v.unverified = nil
	}
}

// anchorsAt checks the anchors at e's seq, and reports those at seqs the
// walk passed over.
func (v *verifier) anchorsAt(e *Entry) {
	for len(v.anchors) > 0 && v.anchors[0].Seq <= e.Seq {
		a := v.anchors[0]
		v.anchors = v.anchors[1:]
		switch {
		case a.Seq < e.Seq:
			v.failSigned(a.Seq, v.trustedSeq, v.trustedHash, "anchor at seq %d: the log has no entry at that seq (deleted row)", a.Seq)
		case !bytes.Equal(a.Hash, e.Hash):
			v.failSigned(e.Seq, v.trustedSeq, v.trustedHash, "anchor at seq %d: the entry's hash is %s, not %s (the log was rewritten at or before seq %d)",
				e.Seq, e.HashHex(), hex.EncodeToString(a.Hash), e.Seq)
		default:
			v.res.Anchors++
			if !v.broken {
				v.trustedSeq, v.trustedHash = e.Seq, e.Hash
			}
		}
	}
}

// finish reports checkpoints and anchors past the end of the chain
// (entries were removed from its tail), checkpoints whose signature
// failed with no later one that verifies, and the checkpoints whose
// signature was not checked for want of a key.
func (v *verifier) finish() {
	if v.unchecked > 0 {
		v.res.Unchecked = fmt.Sprintf("no public key was given to check the signatures of %s (the newest at seq %d, key %s)",
			plural(int64(v.unchecked), "checkpoint", "checkpoints"), v.newestUnchecked.Seq, v.newestUnchecked.KeyID)
	}
	for _, u := range v.unverified {
		v.failSigned(u.seq, u.trustedSeq, u.trustedHash, "%s", u.problem)
	}
	v.unverified = nil
	for _, cp := range v.checkpoints {
		v.failSigned(cp.Seq, v.trustedSeq, v.trustedHash, "checkpoint at seq %d: the log ends at seq %d (entries were removed from its end)",
			cp.Seq, v.last.Seq)
	}
	for _, a := range v.anchors {
		v.failSigned(a.Seq, v.trustedSeq, v.trustedHash, "anchor at seq %d: the log ends at seq %d (entries were removed from its end)",
			a.Seq, v.last.Seq)
	}
}
