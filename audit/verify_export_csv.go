package audit

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// VerifyExportCSV checks a CSV export (ExportCSV, ExportCSVSigned) without
// the database, as VerifyExport checks a JSON Lines one: the header; each
// entry's hash against its values (CSVValue of each cell, each cell exactly
// as the export writes that value, inertCell; hash version 3
// when it has a nonce, else 1 when actor_email_verified is empty, else 2);
// that the records run without a gap, each prev_hash the hash of the
// record before; that no entry is dated before the entry before it, nor
// of a version before that of an entry before it; and the chain-head
// record: present and last, the hash of the last record, signed with a
// key of keys (a head without a signature never verifies, keys or not:
// UnsignedHeadProblem).
//
// The export's own signature (the "# export-signature" record just before
// the chain head, ExportCSVSigned) is checked with keys: it must be by a
// key of keys, over the SHA-256 of every byte of the file before it, the
// filter and chain head the chain-head record names, the seqs of the
// first and last records and the numbers of entries and stubs the file
// holds. A CSV stub has no content digest, so its hash is not recomputed
// here: the console re-hashed each one of hash version 3 before it
// signed, and the signature names the newest stub it could not
// (unproven_stub, an entry appended before version 3), before which the
// entries are counted Unproven. Without the export's signature every stub
// is of unknown version: the entries before the newest stub are
// Unproven. A filtered export without it does not verify when keys are
// given (UnsignedFilteredProblem); an unfiltered one verifies, as far as
// its chain goes, with UnsignedExportWarning.
//
// res.Line is the line of the file the problem is about. It stops at the
// first problem; the error is only for failing to read r.
func VerifyExportCSV(r io.Reader, keys *KeySet) (ExportResult, error) {
	var res ExportResult
	in := &offsetReader{r: r}
	cr := csv.NewReader(in)
	cr.FieldsPerRecord = len(exportHeader)
	body := sha256.New() // the bytes before the signature record
	problem := func(line int, format string, args ...any) (ExportResult, error) {
		res.Line, res.Problem = int64(line), fmt.Sprintf(format, args...)
		return res, nil
	}
	header, err := cr.Read()
	if err == io.EOF {
		return problem(1, "the file is empty: an export starts with its header")
	}
	if err != nil {
		if p := csvProblem(err); p != "" {
			return problem(1, "not a CSV export of the audit log: %s", p)
		}
		return res, fmt.Errorf("read audit export: %w", err)
	}
	if !slices.Equal(header, exportHeader) {
		return problem(1, "the first record is not the header of an audit log export (%s)", strings.Join(exportHeader, ","))
	}
	in.consume(cr.InputOffset(), body)
	var last, lastDated, first *Entry
	var signature, chainHead []string
	var bodySum []byte
	var version int           // the highest hash version of an entry so far
	var stubs, before []int64 // each stub's seq, and how many entries come before it
	var firstStubLine int64
	end := 1 // the line of the last record read
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return problem(pe.StartLine, "%s", csvProblem(err))
			}
			return res, fmt.Errorf("read audit export: %w", err)
		}
		line, _ := cr.FieldPos(0)
		end = line
		switch {
		case chainHead != nil:
			return problem(line, "a record follows the chain head, which ends an export")
		case rec[0] == csvChainHead:
			chainHead = rec
			continue
		case signature != nil:
			return problem(line, "a record follows the export's signature: only the chain head does")
		case strings.HasPrefix(rec[0], csvExportSignature+" "):
			signature, bodySum = rec, body.Sum(nil)
			continue
		}
		in.consume(cr.InputOffset(), body)
		e, stub, err := csvEntry(rec)
		if err != nil {
			return problem(line, "%s", err.Error())
		}
		if p := seqOrHashProblem(e, last, stub); p != "" {
			return problem(line, "%s", p)
		}
		if !stub && e.HashVersion < version {
			return problem(line, "seq %d: hash version %d after an entry of hash version %d: versions never go back along the chain (edited entry)", e.Seq, e.HashVersion, version)
		}
		if p := linkProblem(e, last, lastDated, stub); p != "" {
			return problem(line, "%s", p)
		}
		if last != nil {
			res.Linked++
		} else {
			first = e
		}
		if stub {
			stubs, before = append(stubs, e.Seq), append(before, res.Entries)
			if firstStubLine == 0 {
				firstStubLine = int64(line)
			}
			res.LeftOut++
		} else {
			res.Entries++
			lastDated, version = e, e.HashVersion
		}
		last = e
	}
	if chainHead == nil {
		return problem(end+1, "no chain head: the export was cut short")
	}
	res.Line = int64(end)
	head, filter, err := csvHead(chainHead)
	if err != nil {
		res.Problem = err.Error()
		return res, nil
	}
	res.Head, res.Filter = head, filter
	unprovenStub := int64(0)
	if len(stubs) > 0 {
		unprovenStub = stubs[len(stubs)-1] // without a signature, any stub may lack a digest
	}
	if signature != nil {
		m, err := csvSignature(signature)
		if err != nil {
			res.Problem = err.Error()
			return res, nil
		}
		var firstSeq, lastSeq int64
		if first != nil {
			firstSeq, lastSeq = first.Seq, last.Seq
		}
		m.Filter, m.HeadSeq, m.HeadHash = filter, head.Seq, head.Hash
		if res.Problem = m.check(keys, bodySum, firstSeq, lastSeq, res.Entries, res.LeftOut); res.Problem != "" {
			return res, nil
		}
		if _, ok := slices.BinarySearch(stubs, m.UnprovenStub); m.UnprovenStub != 0 && !ok {
			res.Problem = fmt.Sprintf("the export's signature names seq %d as its newest stub of an entry before hash version 3, and it holds no such stub", m.UnprovenStub)
			return res, nil
		}
		res.exportSignature, res.ExportedAt = true, m.At
		if keys.Len() > 0 { // else unchecked: its unproven_stub is only its word
			unprovenStub = m.UnprovenStub
			res.ExportSigned, res.ExportKeyID = true, m.KeyID
		}
	}
	if unprovenStub != 0 {
		i, _ := slices.BinarySearch(stubs, unprovenStub)
		res.Unproven, res.UnprovenStub = before[i], unprovenStub
		if res.Unproven == 0 {
			res.UnprovenStub = 0
		}
	}
	checkExportEnd(&res, first, last, firstStubLine, keys)
	return res, nil
}

// csvProblem is what is wrong with a CSV record encoding/csv could not
// read, "" when err is not about the file's text.
func csvProblem(err error) string {
	var pe *csv.ParseError
	switch {
	case errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrFieldCount):
		return fmt.Sprintf("%s: every record of an export has as many cells as its header (%d)", pe.Err, len(exportHeader))
	case errors.As(err, &pe):
		return pe.Err.Error()
	}
	return ""
}

// offsetReader is r, keeping what has been read and not yet consumed, so
// that the bytes of each record the CSV reader returns can be hashed
// exactly as they are in the file.
type offsetReader struct {
	r       io.Reader
	pending []byte // bytes read from r from offset base on
	start   int    // how many of them are consumed
	base    int64
}

func (o *offsetReader) Read(p []byte) (int, error) {
	if o.start > 0 { // drop what was consumed, once a read (not once a record)
		o.pending = append(o.pending[:0], o.pending[o.start:]...)
		o.base += int64(o.start)
		o.start = 0
	}
	n, err := o.r.Read(p)
	o.pending = append(o.pending, p[:n]...)
	return n, err
}

// consume writes the bytes up to offset not yet consumed to h (when not
// nil) and marks them consumed.
func (o *offsetReader) consume(offset int64, h hash.Hash) {
	end := int(offset - o.base)
	if h != nil {
		h.Write(o.pending[o.start:end])
	}
	o.start = end
}

// csvStubCells are the cells a stub record fills: seq, prev_hash, hash.
var csvStubCells = []int{0, 19, 20}

// csvEntry is one record of a CSV export as the Entry it hashes, or a
// stub's (no at: stub true) as an Entry with only Seq, PrevHash and Hash.
func csvEntry(rec []string) (e *Entry, stub bool, err error) {
	seq, err := strconv.ParseInt(rec[0], 10, 64)
	if err != nil || seq < 1 || strconv.FormatInt(seq, 10) != rec[0] {
		return nil, false, fmt.Errorf("seq %q is not a seq of the export", rec[0])
	}
	e = &Entry{Seq: seq}
	if rec[1] == "" {
		for i, c := range rec {
			if c != "" && !slices.Contains(csvStubCells, i) {
				return nil, true, fmt.Errorf("seq %d: a stub (a record without at) holds %s: a stub holds only seq, prev_hash and hash", seq, exportHeader[i])
			}
		}
		return e, true, csvLinks(rec, e)
	}
	// Each cell exactly as the export writes its value (inertCell): a
	// cell the export would not have written, such as a value it wrote
	// inert with its "'" taken off, is an edit, though its value hashes
	// alike.
	v := make([]string, len(rec))
	for i, c := range rec {
		v[i] = CSVValue(c)
		if inertCell(v[i]) != c {
			return nil, false, fmt.Errorf("seq %d: %s %q is not written as the export writes it (%q): the cell was edited", seq, exportHeader[i], c, inertCell(v[i]))
		}
	}
	if e.At, err = time.Parse(timeLayout, v[1]); err != nil {
		return nil, false, fmt.Errorf("seq %d: at %q is not a time of the export", seq, v[1])
	}
	e.Actor.Issuer, e.Actor.Subject, e.Actor.Email = v[2], v[3], v[4]
	e.Tenant, e.Action, e.ObjectType, e.ObjectID, e.MessageID, e.OperationID, e.RequestID, e.Reason, e.Outcome =
		v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13], Outcome(v[14])
	if v[15] != "" {
		e.Before = []byte(v[15])
	}
	if v[16] != "" {
		e.After = []byte(v[16])
	}
	e.RemoteAddr, e.UserAgent = v[17], v[18]
	switch v[5] {
	case "":
		e.HashVersion = 1
	case "true", "false":
		e.Actor.EmailVerified, e.HashVersion = v[5] == "true", 2
	default:
		return nil, false, fmt.Errorf("seq %d: actor_email_verified %q is not true, false or empty", seq, v[5])
	}
	if v[21] != "" {
		if e.HashVersion == 1 {
			return nil, false, fmt.Errorf("seq %d: an entry without actor_email_verified (hash version 1) with a nonce: only version %d has one", seq, firstDigestVersion)
		}
		if e.Nonce, err = hex.DecodeString(v[21]); err != nil || len(e.Nonce) != nonceLength {
			return nil, false, fmt.Errorf("seq %d: nonce is not %d hex digits", seq, 2*nonceLength)
		}
		e.HashVersion = firstDigestVersion
	}
	return e, false, csvLinks(v, e)
}

// csvLinks sets e's PrevHash and Hash from the record's cells.
func csvLinks(rec []string, e *Entry) error {
	var err error
	if e.Hash, err = hex.DecodeString(rec[20]); err != nil || len(e.Hash) != sha256.Size {
		return fmt.Errorf("seq %d: hash is not 64 hex digits", e.Seq)
	}
	if rec[19] != "" {
		if e.PrevHash, err = hex.DecodeString(rec[19]); err != nil || len(e.PrevHash) != sha256.Size {
			return fmt.Errorf("seq %d: prev_hash is not 64 hex digits", e.Seq)
		}
	}
	return nil
}

// csvHead reads the chain-head record: the checkpoint the export ends at
// and the filter.
func csvHead(rec []string) (Checkpoint, string, error) {
	seq, err := strconv.ParseInt(rec[1], 10, 64)
	if err != nil || seq < 0 {
		return Checkpoint{}, "", fmt.Errorf("the chain head's seq %q is not a seq", rec[1])
	}
	c := Checkpoint{Seq: seq, Reason: csvReason(rec[4]), KeyID: rec[5]}
	if c.Hash, err = hex.DecodeString(rec[2]); err != nil {
		return Checkpoint{}, "", errors.New("the chain head's hash is not hex")
	}
	filter, ok := strings.CutPrefix(CSVValue(rec[8]), csvFilterPrefix)
	if !ok || inertCell(CSVValue(rec[8])) != rec[8] {
		return Checkpoint{}, "", fmt.Errorf("the chain head's ninth cell is not %s<filter> as the export writes it", csvFilterPrefix)
	}
	for i, cell := range rec[9:] {
		if cell != "" {
			return Checkpoint{}, "", fmt.Errorf("the chain head's cell %d holds %q: only its first nine hold anything", i+10, cell)
		}
	}
	if rec[7] == "" {
		return c, filter, nil
	}
	if c.At, err = time.Parse(timeLayout, rec[3]); err != nil {
		return Checkpoint{}, "", fmt.Errorf("the chain head's signed at %q is not a time of the export", rec[3])
	}
	if c.PublicKey, err = hex.DecodeString(rec[6]); err != nil {
		return Checkpoint{}, "", errors.New("the chain head's public key is not hex")
	}
	if c.Signature, err = hex.DecodeString(rec[7]); err != nil {
		return Checkpoint{}, "", errors.New("the chain head's signature is not hex")
	}
	return c, filter, nil
}

// csvReason is the checkpoint reason a chain-head cell holds: written
// inert (inertCell) since review round 32, raw before. A cell that is not
// the inert form of what it reads as is a raw one: "'x" written raw reads
// "'x", and written inert (a quote before it) reads "'x" too; a wrong
// reading fails the head's signature.
func csvReason(cell string) string {
	if v := CSVValue(cell); inertCell(v) == cell {
		return v
	}
	return cell
}

// csvSignature reads the export's signature record: its first cell,
// "# export-signature" and every csvManifestFields field, name=value, in
// order, one space before each; its other cells empty.
func csvSignature(rec []string) (csvManifest, error) {
	var m csvManifest
	fields := strings.Split(strings.TrimPrefix(rec[0], csvExportSignature+" "), " ")
	if len(fields) != len(csvManifestFields) {
		return m, fmt.Errorf("the export's signature record holds %d fields, not %d (%s)", len(fields), len(csvManifestFields), strings.Join(csvManifestFields, ", "))
	}
	values := map[string]string{}
	for i, name := range csvManifestFields {
		v, ok := strings.CutPrefix(fields[i], name+"=")
		if !ok {
			return m, fmt.Errorf("the export's signature record: field %d is not %s=...", i+1, name)
		}
		values[name] = v
	}
	for i, cell := range rec[1:] {
		if cell != "" {
			return m, fmt.Errorf("the export's signature record: cell %d holds %q: only its first holds anything", i+2, cell)
		}
	}
	for name, n := range map[string]*int64{"entries": &m.Entries, "left_out": &m.LeftOut, "unproven_stub": &m.UnprovenStub} {
		v, err := strconv.ParseInt(values[name], 10, 64)
		if err != nil || v < 0 {
			return m, fmt.Errorf("the export's %s %q is not a count", name, values[name])
		}
		*n = v
	}
	var err error
	if m.At, err = time.Parse(timeLayout, values["exported_at"]); err != nil {
		return m, fmt.Errorf("the export's exported_at %q is not a time of the export", values["exported_at"])
	}
	if m.Body, err = hex.DecodeString(values["sha256"]); err != nil || len(m.Body) != sha256.Size {
		return m, errors.New("the export's sha256 is not 64 hex digits")
	}
	if m.Signature, err = hex.DecodeString(values["signature"]); err != nil {
		return m, errors.New("the export's signature is not hex")
	}
	m.KeyID = values["key_id"]
	for name, n := range map[string]*int64{"first_seq": &m.First, "last_seq": &m.Last} {
		if *n, err = strconv.ParseInt(values[name], 10, 64); err != nil || *n < 0 {
			return m, fmt.Errorf("the export's %s %q is not a seq", name, values[name])
		}
	}
	return m, nil
}

// check verifies m's signature with keys, m holding what the signature
// record claims and the filter and chain head the chain-head record
// names, and that the file holds what was signed: body, the SHA-256 of
// its bytes before the signature record, first and last, the seqs of
// its first and last records (0 for none), and how many entries and
// stubs it holds. Without keys the signature is not checked (the caller
// says so), but the file must still hold what the record claims: a
// console never writes one that does not match. It returns what is
// wrong, "" when nothing is.
func (m *csvManifest) check(keys *KeySet, body []byte, first, last, entries, leftOut int64) string {
	var pub []byte
	if keys != nil {
		pub = keys.byID[m.KeyID]
	}
	switch {
	case keys.Len() > 0 && pub == nil:
		return fmt.Sprintf("the export is signed by key %s, which is not one of the public keys given", keyName(m.KeyID))
	case keys.Len() > 0 && !ed25519.Verify(pub, m.signedBytes(), m.Signature):
		return fmt.Sprintf("the export's signature does not verify with key %s (its filter, chain head, counts, first or last seq, or time was changed)", keyName(m.KeyID))
	case !bytes.Equal(m.Body, body):
		return "the export's records are not the ones it was signed with (a byte before its signature was changed, or a record edited, added or taken off since the export)"
	case m.First != first || m.Last != last:
		return fmt.Sprintf("the export was signed running from seq %d to %d, but its records run from seq %d to %d", m.First, m.Last, first, last)
	case m.Entries != entries || m.LeftOut != leftOut:
		return fmt.Sprintf("the export was signed holding %d entries and %d stubs, but it holds %d and %d", m.Entries, m.LeftOut, entries, leftOut)
	}
	return ""
}
