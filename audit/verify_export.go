package audit

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/quarantine-console/quarantine"
)

// ExportResult is what VerifyExport (or VerifyExportCSV) found in an
// export. Of a CSV export, a line is a record.
type ExportResult struct {
	Entries int64 // entry lines read
	LeftOut int64 // stub lines read: entries the export's filter left out
	// Linked is how many lines (entries and stubs) link to the line before
	// them: all but the first in an export that verified.
	Linked int64
	// Filter is what the export says its entries were selected by ("" for
	// all of them, and for an export that does not say).
	Filter string
	// Unproven is how many entries come before the newest stub of an
	// entry appended before hash version 3 (UnprovenStub, its seq). Such a
	// stub has no content digest, so its hash cannot be recomputed and its
	// prev_hash is covered by nothing the verifier checks: the signed head
	// vouches only for the entries after it; the ones before it are linked,
	// but only by the stub's word. A stub of version 3 is re-hashed from
	// its seq, content digest and prev_hash, so an export of version 3
	// entries is proven to its head (Unproven 0). Check unproven entries
	// against the database (console audit verify) or an unfiltered export.
	// A CSV stub carries no digest: the stub its signature names
	// (VerifyExportCSV), or without one its newest stub, is UnprovenStub.
	Unproven     int64
	UnprovenStub int64
	// Head is the export's chain head (its last line); Signed when its
	// signature verified with the keys given.
	Head   Checkpoint
	Signed bool
	// ExportSigned is true when the export itself is signed (its lines,
	// filter, first and last seq; ExportJSONLSigned, ExportCSVSigned) and
	// the signature verified with the keys given, by key ExportKeyID at
	// ExportedAt. A filtered export without that signature does not
	// verify when keys are given; an unfiltered one (from an older
	// console) is proven only as far as its chain goes: it starts at seq
	// 1 and holds no stub, but nothing signed says it ended at its chain
	// head: its newest entries may have been cut off, the head of an
	// earlier checkpoint put in place of its own. A caller must not take
	// it for whole (console audit verify exits 5 for it).
	ExportSigned bool
	ExportedAt   time.Time
	ExportKeyID  string
	// Problem says what is wrong, "" when nothing is; Line is the line of
	// the file it is about.
	Problem string
	Line    int64
	// Unchecked says what could not be checked when nothing is wrong, ""
	// when every check was made: the signatures of the chain head and of
	// the export, when no public key was given. What the file shows
	// without a key (an edited entry, a gap, a head that is not its last
	// line, lines that are not the ones its signature names) is a Problem
	// still.
	Unchecked string
	// exportSignature: the export carries its own signature, checked
	// (ExportSigned) or, without keys, not.
	exportSignature bool
}

// OK reports whether the export verified: nothing in it is wrong, and
// every check was made (Unchecked is empty). Some of its entries may still
// be unproven (Unproven), and an export without its own signature
// (ExportSigned false) is proven only as far as its chain goes.
func (r ExportResult) OK() bool { return r.Problem == "" && r.Unchecked == "" }

// Err returns nil for an export that verified, an error wrapping
// ErrChainBroken that says what is wrong, or, when nothing is but a check
// could not be made, one wrapping ErrNotChecked that says which.
func (r ExportResult) Err() error {
	switch {
	case r.Problem != "":
		return fmt.Errorf("%w: line %d: %s", ErrChainBroken, r.Line, r.Problem)
	case r.Unchecked != "":
		return fmt.Errorf("%w: %s", ErrNotChecked, r.Unchecked)
	}
	return nil
}

// String describes the result in one line, as a terminal may show it
// (Printable).
func (r ExportResult) String() string { return Printable(r.text()) }

func (r ExportResult) text() string {
	switch {
	case r.Problem != "":
		return fmt.Sprintf("audit export BROKEN at line %d: %s", r.Line, r.Problem)
	case r.Unchecked != "":
		return fmt.Sprintf("audit export NOT CHECKED: %s; nothing else is wrong: %s; chain head seq %d hash %s, which nothing checked vouches for",
			r.Unchecked, r.lines(), r.Head.Seq, r.Head.HashHex())
	}
	s := fmt.Sprintf("audit export ok: %s; chain head seq %d hash %s", r.lines(), r.Head.Seq, r.Head.HashHex())
	if r.Signed { // always, for an export that verified (checkExportEnd)
		s += fmt.Sprintf(", signed %s (%s, key %s)", r.Head.At.Format(timeLayout), r.Head.Reason, r.Head.KeyID)
	}
	if r.Filter != "" {
		s += fmt.Sprintf("; filtered (%s), %s left out", r.Filter, plural(r.LeftOut, "entry", "entries"))
	}
	if r.ExportSigned {
		s += fmt.Sprintf("; the export is signed (exported %s, key %s): its lines and filter are as written", r.ExportedAt.Format(timeLayout), r.ExportKeyID)
	} else {
		s += fmt.Sprintf("; %s (nothing proves it ended at seq %d)", UnsignedExportWarning, r.Head.Seq)
	}
	if r.Unproven > 0 {
		s += fmt.Sprintf("; %s before seq %d %s unproven: seq %d is a stub of an entry appended before hash version 3, without a content digest, so its hash cannot be recomputed and their link to the signed head rests on its prev_hash; check them with console audit verify against the database, or with an unfiltered export",
			plural(r.Unproven, "entry", "entries"), r.UnprovenStub, isAre(r.Unproven), r.UnprovenStub)
	}
	return s
}

// lines says what the export holds and how much of it is chained: "7
// entries and 13 stubs of entries left out, 19 lines linked to the line
// before" (all but the first). "7 entries, 19 linked" read as an error to
// an auditor: the stubs are lines the chain links too.
func (r ExportResult) lines() string {
	s := plural(r.Entries, "entry", "entries")
	if r.LeftOut > 0 {
		s += " and " + plural(r.LeftOut, "stub", "stubs") + " of entries left out"
	}
	return s + ", " + plural(r.Linked, "line", "lines") + " linked to the line before"
}

// UnsignedExportWarning is what ExportResult.String says of an export
// that verified without a signature of its own. Only an unfiltered one
// does (with keys), and the chain proves it starts at seq 1 and leaves
// nothing out up to its signed head; what it cannot prove is that the
// export ended there: the head of any earlier checkpoint, from another
// export or the database, fits a file cut after that checkpoint's entry.
const UnsignedExportWarning = "WARNING: the export itself is not signed (written by a console before exports were signed, or its signature taken off): " +
	"edits since the export cannot be ruled out beyond what the chain proves: its newest entries may have been cut off its end, " +
	"with an earlier signed checkpoint put in place of the chain head it ended at"

// isAre is "is" for one, "are" for more.
func isAre(n int64) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// VerifyExport checks a JSON Lines export (ExportJSONL) without the
// database: each entry's hash against its fields (and from hash version 3
// its nonce), and each stub's of hash
// version 3 against its seq, content digest and prev_hash; that the lines
// (entries, and stubs for entries the filter left out) run without a gap,
// each line's prev_hash the hash of the line before; that no entry is
// dated before the entry before it; that hash versions do not go back
// along the lines (a stub without a content digest after a line of
// version 3 had it taken off); and the last line's chain head: present (an
// export without one was cut short), the hash of the last line (an export
// whose newest entries were taken off ends before it), and signed, with a
// signature that verifies with keys. A head without a signature never
// verifies (no console writes one: UnsignedHeadProblem), and without keys
// a signed head is not checked either, as Verify treats checkpoints: an
// export checked without keys never verifies (Unchecked, when nothing
// else is wrong). An export that says it is not filtered (or
// does not say) must hold every entry: a stub there is refused. A
// filtered export must carry its own signature when keys are given,
// whatever the hash versions of its lines (see checkExportEnd); an
// unfiltered one without verifies with ExportSigned false, which does not
// prove that its newest entries were not cut off (ExportResult.ExportSigned).
// It stops at the first problem; the error is only for failing to read r.
func VerifyExport(r io.Reader, keys *KeySet) (ExportResult, error) {
	var res ExportResult
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20) // an entry's fields are bounded well below 1 MiB
	var last *Entry                           // the line before: an entry, or a stub (Seq, PrevHash, Hash, version, digest)
	var lastDated *Entry                      // the entry before, for its at
	var headLine []byte
	var firstStubLine int64 // the line of the first stub, for the filter check at the end
	var first *Entry        // the first line
	lines := sha256.New()   // the bytes before the trailer, for the export's signature
	for sc.Scan() {
		res.Line++
		line := sc.Bytes()
		if headLine != nil {
			res.Problem = "a line follows the chain head, which ends an export"
			return res, nil
		}
		if bytes.HasPrefix(line, []byte(`{"chain_head":`)) {
			headLine = bytes.Clone(line)
			continue
		}
		lines.Write(line)
		lines.Write([]byte{'\n'})
		e, stub, err := exportedEntry(line)
		if err != nil {
			res.Problem = err.Error()
			return res, nil
		}
		if res.Problem = seqOrHashProblem(e, last, stub); res.Problem != "" {
			return res, nil
		}
		switch {
		case stub && e.HashVersion >= firstDigestVersion && !bytes.Equal(chainHash(e.Seq, e.ContentDigest, e.PrevHash), e.Hash):
			res.Problem = fmt.Sprintf("seq %d: hash does not match the stub's content digest and prev_hash (an edited stub, or an entry before it rewritten)", e.Seq)
			return res, nil
		case last != nil && last.HashVersion >= firstDigestVersion && e.HashVersion < firstDigestVersion && stub:
			res.Problem = fmt.Sprintf("seq %d: a stub without a content digest (hash version 1 or 2) after a line of hash version %d: versions never go back along the chain (its digest was taken off?)",
				e.Seq, last.HashVersion)
			return res, nil
		case last != nil && last.HashVersion >= firstDigestVersion && e.HashVersion < firstDigestVersion:
			res.Problem = fmt.Sprintf("seq %d: hash version %d after a line of hash version %d: versions never go back along the chain (edited entry)",
				e.Seq, e.HashVersion, last.HashVersion)
			return res, nil
		}
		if res.Problem = linkProblem(e, last, lastDated, stub); res.Problem != "" {
			return res, nil
		}
		if last != nil {
			res.Linked++
		} else {
			first = e
		}
		if stub {
			res.LeftOut++
			if e.HashVersion < firstDigestVersion {
				res.Unproven, res.UnprovenStub = res.Entries, e.Seq
			}
			if firstStubLine == 0 {
				firstStubLine = res.Line
			}
		} else {
			res.Entries++
			lastDated = e
		}
		last = e
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) { // the file's own doing: a problem, not a failure to read it
			res.Line++
			res.Problem = "a line longer than 1 MiB: no export writes one (an entry's fields are bounded)"
			return res, nil
		}
		return res, fmt.Errorf("read audit export: %w", err)
	}
	if headLine == nil {
		res.Line++
		res.Problem = "no chain head: the export was cut short"
		return res, nil
	}
	head, x, err := exportedHead(headLine)
	if err != nil {
		res.Problem = err.Error()
		return res, nil
	}
	res.Head, res.Filter = head, x.Filter
	var firstSeq, lastSeq int64
	if first != nil {
		firstSeq, lastSeq = first.Seq, last.Seq
	}
	if x.Signature != "" {
		if problem := checkExportSignature(x, lines.Sum(nil), head, firstSeq, lastSeq, keys); problem != "" {
			res.Problem = problem
			return res, nil
		}
		res.exportSignature = true
		res.ExportedAt, _ = time.Parse(timeLayout, x.ExportedAt)
		if keys.Len() > 0 {
			res.ExportSigned, res.ExportKeyID = true, x.KeyID
		}
		// A head signed after the export was written is not the one it
		// ended at: what the export says of the entries it selected
		// (none, say) would be claimed up to a later head. The signature
		// covers the head since manifest version 2; this binds the head of
		// an export signed before (version 1) too.
		if head.Signed() && head.At.After(res.ExportedAt) {
			res.Problem = fmt.Sprintf("the chain head was signed at %s, after the export was written (%s): it is not the head the export ended at",
				head.At.UTC().Format(timeLayout), x.ExportedAt)
			return res, nil
		}
	}
	checkExportEnd(&res, first, last, firstStubLine, keys)
	return res, nil
}

// seqOrHashProblem says what is wrong with e, read from an export after
// last (nil for the first line): a gap in the seqs, or for an entry (not
// a stub) a hash that is not the hash of its fields. "" when nothing is.
func seqOrHashProblem(e, last *Entry, stub bool) string {
	switch {
	case last != nil && e.Seq != last.Seq+1:
		return fmt.Sprintf("seq %d follows seq %d: entries are missing (a filtered export holds a stub for each entry it leaves out)", e.Seq, last.Seq)
	case !stub && !bytes.Equal(hashEntry(e), e.Hash):
		return fmt.Sprintf("seq %d: hash does not match its contents (edited entry)", e.Seq)
	}
	return ""
}

// linkProblem says what is wrong with how e links to last, the line or
// record before it (nil for the first), and for an entry with how it is
// dated after lastDated, the entry before it. "" when nothing is.
func linkProblem(e, last, lastDated *Entry, stub bool) string {
	switch {
	case e.Seq == 1 && e.PrevHash != nil:
		return "seq 1: has a prev_hash, but the first entry has none (edited entry)"
	case last != nil && !bytes.Equal(e.PrevHash, last.Hash):
		return fmt.Sprintf("seq %d: prev_hash is not the hash of seq %d (one of the two was rewritten)", e.Seq, last.Seq)
	case !stub && lastDated != nil && e.At.Before(lastDated.At):
		return fmt.Sprintf("seq %d: dated %s, before seq %d (%s): entries are appended in time order (backdated or edited entry)",
			e.Seq, e.At.Format(timeLayout), lastDated.Seq, lastDated.At.Format(timeLayout))
	}
	return ""
}

// UnsignedFilteredProblem is what VerifyExport and VerifyExportCSV say of a
// filtered export without a signature of its own, checked with keys.
const UnsignedFilteredProblem = "a filtered export must carry the console's signature, which alone proves its filter, its first line and " +
	"which entries are stubs; this one has none (taken off, or written by a console before exports were signed: " +
	"ask for the export again, or check the range against the database with console audit verify)"

// UnsignedHeadProblem is what VerifyExport and VerifyExportCSV say of an
// export whose chain head carries no signature, with keys or without.
const UnsignedHeadProblem = "the chain head is not signed: an export from the console always is (serve does not start without a signing key), " +
	"so this file was rebuilt or had its signatures taken off, and nothing in it is proven"

// checkExportEnd checks, once res holds what the export says of itself
// (Filter, Head, whether it carries its own signature, and ExportSigned
// when that verified), what every export must hold whatever its format:
// a filtered export is signed itself when keys are given; an unfiltered
// one holds no stub (firstStubLine, the line of the first, 0 for none),
// starts at seq 1 and holds a line (first and last nil: none, which only
// an empty log's export may); last, the last line or record, is the chain
// head; and the head is signed (with keys or without:
// UnsignedHeadProblem), with a key of keys. It sets res.Problem (and
// res.Line) at the first problem, else res.Signed when the head's
// signature verified, or res.Unchecked when no keys were given to check
// it.
//
// A filtered export is proven only by its own signature: its filter,
// where it starts and which entries are stubs are said by nothing else.
// A console always has its signing key and signs every export it writes,
// whatever the hash versions of the entries, so one without had it taken
// off: an export of entries before hash version 3 only looks the same
// stripped as it did written by a console before exports were signed,
// and is refused alike. Checked when keys are given, as the chain head's
// signature is.
func checkExportEnd(res *ExportResult, first, last *Entry, firstStubLine int64, keys *KeySet) {
	head := res.Head
	switch {
	case !res.exportSignature && keys != nil && res.Filter != "":
		// Whether the export carries its signature takes no key to see:
		// one that carries it and could not be checked is Unchecked below.
		res.Problem = UnsignedFilteredProblem
		return
	case res.Filter == "" && firstStubLine != 0:
		res.Line = firstStubLine
		res.Problem = "an entry is left out (a stub), but the export says it is not filtered"
		return
	case res.Filter == "" && first != nil && first.Seq != 1:
		res.Line = 1
		res.Problem = fmt.Sprintf("the export says it is not filtered, so it starts at seq 1, but its first line is seq %d (its first entries were taken off)", first.Seq)
		return
	case res.Filter == "" && last == nil && head.Seq != 0:
		// An unfiltered export holds every entry up to its head, so one
		// without a line had them all taken off, which the checks of its
		// first and last line would not see. (A filtered one may select
		// nothing: its own signature says so.)
		res.Problem = fmt.Sprintf("the export says it is not filtered, so it holds every entry up to its chain head, seq %d, but it holds none (its entries were taken off)", head.Seq)
		return
	case last != nil && last.Seq != head.Seq:
		res.Problem = fmt.Sprintf("the export ends at seq %d, but its chain head is seq %d (entries were taken off its end)", last.Seq, head.Seq)
		return
	case last != nil && !bytes.Equal(last.Hash, head.Hash):
		res.Problem = fmt.Sprintf("the chain head's hash %s is not seq %d's %s", head.HashHex(), last.Seq, last.HashHex())
		return
	case !head.Signed():
		// Refused whatever keys are given: serve does not start without a
		// signing key, so a console's export always ends at a signed head.
		// One without was written from a database of someone's choosing,
		// or had its signatures taken off; nothing in it is proven.
		res.Problem = UnsignedHeadProblem
		return
	case keys.Len() == 0:
		// Everything a key is not needed for holds: the signatures are a
		// check not made, never a finding.
		res.Unchecked = fmt.Sprintf("no public key was given to check the chain head's signature (key %s)", keyName(head.KeyID))
		if res.exportSignature {
			res.Unchecked += " nor the export's own"
		}
		return
	}
	if err := head.VerifySignature(keys); err != nil {
		res.Problem = "the chain head is " + err.Error()
		return
	}
	res.Signed = true
}

// exportedLine is one line of ExportJSONL: an entry's keys, and a stub's.
// HashVersion is nil when the line names none (an export from before
// version 3).
type exportedLine struct {
	jsonEntry
	HashVersion   *int    `json:"hash_version"`
	LeftOut       bool    `json:"left_out"`
	ContentDigest *string `json:"content_digest"`
}

// exportedEntry is one entry line of ExportJSONL as the Entry it hashes,
// or a stub line (stub true) as an Entry with only Seq, PrevHash, Hash
// and, from hash version 3, HashVersion and ContentDigest (HashVersion 0
// for a stub without: version 1 or 2).
func exportedEntry(line []byte) (e *Entry, stub bool, err error) {
	var j exportedLine
	if err := json.Unmarshal(line, &j); err != nil {
		return nil, false, fmt.Errorf("not an entry of a JSON Lines export: %v", err)
	}
	keys, err := lineKeys(line)
	if err != nil {
		return nil, false, fmt.Errorf("seq %d: %v", j.Seq, err)
	}
	if j.LeftOut {
		e, err := exportedStub(&j)
		if err != nil {
			return nil, true, err
		}
		for _, k := range keys {
			if !slices.Contains(stubKeys, k) {
				return nil, true, fmt.Errorf("seq %d: a stub (left_out) holds %q: a stub holds only %s, nothing its digest does not prove", j.Seq, k, strings.Join(stubKeys, ", "))
			}
		}
		return e, true, nil
	}
	if j.ContentDigest != nil {
		return nil, false, fmt.Errorf("seq %d: an entry with a content_digest: only a stub (left_out) carries one", j.Seq)
	}
	for _, k := range keys {
		if k != "hash_version" && !slices.Contains(exportHeader, k) {
			return nil, false, fmt.Errorf("seq %d: an entry holds %q, which is not a key of an export's entry (keys are matched exactly, case and all)", j.Seq, k)
		}
	}
	e, err = exportedFields(&j)
	return e, false, err
}

// stubKeys are the keys of a stub line, and the only ones it may hold.
var stubKeys = []string{"seq", "left_out", "hash_version", "content_digest", "prev_hash", "hash"}

// lineKeys returns the keys of the JSON object line, in order, and an
// error for a key it holds twice, in any case: encoding/json matches keys
// case-insensitively and keeps the last of duplicates, while jq, Python or
// a person reading the line sees the first. With every key required to be
// exactly one the export writes (lineKeys' callers), each field is read
// from the one key of its name that anyone else reads too.
func lineKeys(line []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("a line is not a JSON object")
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("a line is not a JSON object: %v", err)
		}
		k, _ := t.(string)
		for _, seen := range keys {
			if strings.EqualFold(seen, k) {
				return nil, fmt.Errorf("key %q twice (as %q and %q): a reader could read either", k, seen, k)
			}
		}
		keys = append(keys, k)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("a line is not a JSON object: %v", err)
		}
	}
	return keys, nil
}

func exportedStub(j *exportedLine) (*Entry, error) {
	if j.Action != "" || j.At != "" {
		return nil, fmt.Errorf("seq %d: a stub (left_out) holds content", j.Seq)
	}
	if j.Nonce != "" {
		return nil, fmt.Errorf("seq %d: a stub (left_out) shows a nonce: only an entry does (with it, anyone could confirm a guess of the content behind the stub)", j.Seq)
	}
	e := &Entry{Seq: j.Seq}
	switch {
	case j.HashVersion == nil && j.ContentDigest != nil:
		return nil, fmt.Errorf("seq %d: a stub with a content digest names no hash version", j.Seq)
	case j.HashVersion == nil:
		// Appended before version 3: its hash cannot be recomputed.
	case *j.HashVersion < firstDigestVersion || *j.HashVersion > currentHashVersion:
		return nil, fmt.Errorf("seq %d: a stub of hash version %d: a stub names version %d, or none", j.Seq, *j.HashVersion, currentHashVersion)
	case j.ContentDigest == nil:
		return nil, fmt.Errorf("seq %d: a stub of hash version %d without its content digest", j.Seq, *j.HashVersion)
	default:
		var err error
		if e.ContentDigest, err = hex.DecodeString(*j.ContentDigest); err != nil || len(e.ContentDigest) != contentDigestLength {
			return nil, fmt.Errorf("seq %d: content_digest is not 64 hex digits", j.Seq)
		}
		e.HashVersion = *j.HashVersion
	}
	return exportedLinks(&j.jsonEntry, e)
}

func exportedFields(j *exportedLine) (*Entry, error) {
	e := &Entry{Seq: j.Seq, Actor: actorOf(&j.jsonEntry), Tenant: j.Tenant, Action: j.Action, ObjectType: j.ObjectType, ObjectID: j.ObjectID,
		MessageID: j.MessageID, OperationID: j.OperationID, RequestID: j.RequestID, Reason: j.Reason, Outcome: Outcome(j.Outcome),
		Before: rawOrNil(j.Before), After: rawOrNil(j.After), RemoteAddr: j.RemoteAddr, UserAgent: j.UserAgent}
	// An export from before version 3 names no version: 1 when
	// actor_email_verified is null, else 2.
	var verified *bool
	if j.ActorEmailOK != nil {
		verified = &e.Actor.EmailVerified
	}
	e.HashVersion = storedVersion(nil, verified)
	if j.HashVersion != nil {
		switch v := *j.HashVersion; {
		case v < 1 || v > currentHashVersion:
			return nil, fmt.Errorf("seq %d: hash version %d is not one of 1 to %d", j.Seq, v, currentHashVersion)
		case v == 1 && j.ActorEmailOK != nil:
			return nil, fmt.Errorf("seq %d: hash version 1 with an actor_email_verified: version 1 has none", j.Seq)
		case v != 1 && j.ActorEmailOK == nil:
			return nil, fmt.Errorf("seq %d: hash version %d with actor_email_verified null: only version 1 has none", j.Seq, v)
		}
		e.HashVersion = *j.HashVersion
	}
	switch {
	case e.HashVersion >= firstDigestVersion && j.Nonce == "":
		return nil, fmt.Errorf("seq %d: an entry of hash version %d without its nonce", j.Seq, e.HashVersion)
	case e.HashVersion < firstDigestVersion && j.Nonce != "":
		return nil, fmt.Errorf("seq %d: an entry of hash version %d with a nonce: only version %d has one", j.Seq, e.HashVersion, firstDigestVersion)
	case j.Nonce != "":
		nonce, err := hex.DecodeString(j.Nonce)
		if err != nil || len(nonce) != nonceLength {
			return nil, fmt.Errorf("seq %d: nonce is not %d hex digits", j.Seq, 2*nonceLength)
		}
		e.Nonce = nonce
	}
	var err error
	if e.At, err = time.Parse(timeLayout, j.At); err != nil {
		return nil, fmt.Errorf("seq %d: at %q is not a time of the export", j.Seq, j.At)
	}
	return exportedLinks(&j.jsonEntry, e)
}

// exportedLinks sets e's Hash and PrevHash from j.
func exportedLinks(j *jsonEntry, e *Entry) (*Entry, error) {
	var err error
	if e.Hash, err = hex.DecodeString(j.Hash); err != nil || len(e.Hash) != 32 {
		return nil, fmt.Errorf("seq %d: hash is not 64 hex digits", j.Seq)
	}
	if j.PrevHash != nil {
		if e.PrevHash, err = hex.DecodeString(*j.PrevHash); err != nil || len(e.PrevHash) != 32 {
			return nil, fmt.Errorf("seq %d: prev_hash is not 64 hex digits", j.Seq)
		}
	}
	return e, nil
}

func actorOf(j *jsonEntry) (a quarantine.Actor) {
	a.Issuer, a.Subject, a.Email = j.ActorIssuer, j.ActorSubject, j.ActorEmail
	if j.ActorEmailOK != nil {
		a.EmailVerified = *j.ActorEmailOK
	}
	return a
}

// rawOrNil is a before or after as the hash covers it: nil for JSON null.
func rawOrNil(m json.RawMessage) json.RawMessage {
	if len(m) == 0 || string(m) == "null" {
		return nil
	}
	return m
}

// checkExportSignature checks the export's own signature (x, from its
// trailer) with keys, and that what it signed is what the file holds:
// linesHash, the SHA-256 of the bytes before the trailer, the chain head
// of its trailer, and the seqs of its first and last lines. A signature of
// manifest version 1, which had no head, is taken too (an export written
// before version 2; VerifyExport then binds its head by time). Without
// keys the signature is not checked (the caller says so), but what the
// file holds must still be what it claims was signed: a console never
// writes a trailer that does not match its lines. It returns what is
// wrong, "" when nothing is.
func checkExportSignature(x jsonExport, linesHash []byte, head Checkpoint, first, last int64, keys *KeySet) string {
	var pub []byte
	if keys != nil {
		pub = keys.byID[x.KeyID]
	}
	at, err := time.Parse(timeLayout, x.ExportedAt)
	if err != nil {
		return fmt.Sprintf("the export's exported_at %q is not a time of the export", x.ExportedAt)
	}
	claimed, err := hex.DecodeString(x.LinesHash)
	if err != nil {
		return "the export's lines_sha256 is not hex"
	}
	sig, err := hex.DecodeString(x.Signature)
	if err != nil {
		return "the export's signature is not hex"
	}
	switch {
	case keys.Len() > 0 && pub == nil:
		return fmt.Sprintf("the export is signed by key %s, which is not one of the public keys given", keyName(x.KeyID))
	case keys.Len() > 0 && !ed25519.Verify(pub, exportManifest(exportVersion, claimed, head, x.Filter, x.FirstSeq, x.LastSeq, at, x.KeyID), sig) &&
		!ed25519.Verify(pub, exportManifest(1, claimed, head, x.Filter, x.FirstSeq, x.LastSeq, at, x.KeyID), sig):
		return fmt.Sprintf("the export's signature does not verify with key %s (its filter, chain head, first or last seq, or time was changed)", keyName(x.KeyID))
	case !bytes.Equal(claimed, linesHash):
		return "the export's lines are not the ones it was signed with (a line was edited, added or taken off since the export)"
	case x.FirstSeq != first || x.LastSeq != last:
		return fmt.Sprintf("the export was signed running from seq %d to %d, but its lines run from seq %d to %d", x.FirstSeq, x.LastSeq, first, last)
	}
	return ""
}

// Keys of the trailer line, and of its two objects.
var (
	trailerKeys = []string{"chain_head", "export"}
	headKeys    = []string{"seq", "hash", "signed_at", "reason", "key_id", "public_key", "signature"}
	exportKeys  = []string{"filter", "first_seq", "last_seq", "exported_at", "lines_sha256", "key_id", "signature"}
)

// exportedHead is the chain head line of ExportJSONL, and what it says of
// the export (its filter, and its signature when it has one).
func exportedHead(line []byte) (Checkpoint, jsonExport, error) {
	var t struct {
		ChainHead json.RawMessage `json:"chain_head"`
		Export    json.RawMessage `json:"export"`
	}
	if err := json.Unmarshal(line, &t); err != nil {
		return Checkpoint{}, jsonExport{}, fmt.Errorf("the chain head is not readable: %v", err)
	}
	for _, o := range []struct {
		raw   []byte
		known []string
	}{{line, trailerKeys}, {t.ChainHead, headKeys}, {t.Export, exportKeys}} {
		if len(o.raw) == 0 || string(o.raw) == "null" {
			continue
		}
		keys, err := lineKeys(o.raw)
		if err != nil {
			return Checkpoint{}, jsonExport{}, fmt.Errorf("the chain head line: %v", err)
		}
		for _, k := range keys {
			if !slices.Contains(o.known, k) {
				return Checkpoint{}, jsonExport{}, fmt.Errorf("the chain head line holds %q, which is not a key of it (keys are matched exactly)", k)
			}
		}
	}
	var tr jsonTrailer
	if err := json.Unmarshal(line, &tr); err != nil {
		return Checkpoint{}, jsonExport{}, fmt.Errorf("the chain head is not readable: %v", err)
	}
	var x jsonExport
	if tr.Export != nil {
		x = *tr.Export
	}
	c, err := exportedCheckpoint(tr)
	return c, x, err
}

func exportedCheckpoint(t jsonTrailer) (Checkpoint, error) {
	h := t.ChainHead
	c := Checkpoint{Seq: h.Seq, Reason: h.Reason, KeyID: h.KeyID}
	var err error
	if c.Hash, err = hex.DecodeString(h.Hash); err != nil {
		return Checkpoint{}, fmt.Errorf("the chain head's hash is not hex")
	}
	if h.Signature == "" {
		return c, nil
	}
	if c.At, err = time.Parse(timeLayout, h.At); err != nil {
		return Checkpoint{}, fmt.Errorf("the chain head's signed_at %q is not a time of the export", h.At)
	}
	if c.Signature, err = hex.DecodeString(h.Signature); err != nil {
		return Checkpoint{}, fmt.Errorf("the chain head's signature is not hex")
	}
	if c.PublicKey, err = hex.DecodeString(h.PublicKey); err != nil {
		return Checkpoint{}, fmt.Errorf("the chain head's public key is not hex")
	}
	return c, nil
}
