package audit

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
)

const chainHead = `SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1`

// exportHeader names the CSV columns and the JSONL keys, in order.
var exportHeader = []string{
	"seq", "at", "actor_issuer", "actor_subject", "actor_email", "actor_email_verified", "tenant", "action",
	"object_type", "object_id", "message_id", "operation_id", "request_id", "reason", "outcome",
	"before", "after", "remote_addr", "user_agent", "prev_hash", "hash", "nonce",
}

// ExportCSV writes the entries f selects to w as CSV, oldest first, streaming
// them from the database cursor (memory does not grow with the number of
// rows). The first record is the header (the column names of audit_log);
// then one record per entry, at in UTC with microseconds,
// actor_email_verified as true, false or empty (NULL, hash version 1),
// before and after as canonical JSON (empty for NULL), hashes in hex.
// Every cell that starts with '=', '+', '-', '@', a tab, a carriage return
// or "'" is written with one "'" in front, so that no spreadsheet reads a
// value a producer or a person chose (a message id, a reason, a user agent)
// as a formula; CSVValue takes it off again, and the values it gives are
// the ones the hashes cover. The last record is the trailer
//
//	# chain-head,<seq>,<hash>[,<signed at>,<reason>,<key id>,<public key>,<signature>]
//
//	  ,filter:<what the entries were selected by, empty for all of them>
//
// with head: the head of the chain the export ends at (entries appended
// later are left out), and when head is a signed checkpoint its signature
// (public key and signature in hex), which anyone with the public key can
// check; in its ninth cell, the filter. It has as many cells as the header
// (the rest empty), so readers that want records of one length read it,
// and one that treats '#' as a comment skips it.
//
// The records run without a gap from the first entry f selects to head:
// an entry f leaves out (another tenant's, another action) is a record
// with only seq, prev_hash and hash, so that the chain can be followed to
// the signed head without showing what the entry says. The last column,
// nonce, is an entry's nonce in hex (hash.go), which its hash covers: an
// entry of hash version 3 has one, and only those (empty before, and in
// a stub). The CSV names no hash version (a record with a nonce is of
// version 3) and its stubs carry no content digest: a verifier re-hashes
// no stub, and only the export's own signature (ExportCSVSigned, which
// re-hashes them before it signs) proves a filtered range to its signed
// head. A cell holding a
// control character or a bidirectional-text control (which a terminal or
// a spreadsheet would act on, or display reordered) is written as "'"
// followed by the value quoted as a Go string with every character past
// ASCII escaped ('"\u202e..."); CSVValue takes it back.
//
// f's Limit is ignored; Before and After bound the seq range. It returns an
// an invalid quarantine.Error for an invalid f.
//
// An export that fails before its end (a read fails, a stub's hash does
// not hold) writes, instead of its last records, the record
// "# export-error,<exportErrorText>" (as long as the header) and returns
// the error.
//
// An export written by ExportCSV says nothing signed of its filter, its
// range or its rows: ExportCSVSigned signs them.
func ExportCSV(ctx context.Context, db Querier, f Filter, head Checkpoint, w io.Writer) error {
	return exportCSV(ctx, db, f, head, nil, w)
}

// ExportCSVSigned is ExportCSV with the export signed by signer (the key
// that signs the checkpoints): before the chain-head record it writes a
// record whose first cell is
//
//	# export-signature first_seq=N last_seq=N entries=N left_out=N unproven_stub=N exported_at=T sha256=H key_id=K signature=S
//
// and whose other cells are empty (as many as the header's), so that a
// reader that tells entries by their at or action, or skips records
// starting with '#', passes over it: the seqs of its first and
// last records (0 when it has none), how many entries and stubs it holds,
// the seq of its newest stub of an entry appended before hash version 3
// (0 for none: see below), when it was written, the SHA-256 of every byte
// of the file before this record (the header and every entry and stub, as
// written), the key id, and an Ed25519 signature over those, the filter
// and the chain head the export ends at (csvManifest.signedBytes).
// VerifyExportCSV checks it: no byte before it can be changed, no record
// added or taken off, nor the filter, the counts or the chain head
// changed, without the signature failing.
//
// A CSV stub carries no content digest, so a verifier cannot re-hash it;
// before it signs, the export re-hashes every stub of hash version 3 from
// its stored digest and prev_hash and fails (writing no signature) when
// one does not match: the signature vouches for the stubs' hashes. A stub
// of an earlier version has no digest: unproven_stub names the newest,
// and the entries before it are linked to the signed head only by its
// word, as in a JSON Lines export.
func ExportCSVSigned(ctx context.Context, db Querier, f Filter, head Checkpoint, signer *Signer, w io.Writer) error {
	return exportCSV(ctx, db, f, head, signer, w)
}

func exportCSV(ctx context.Context, db Querier, f Filter, head Checkpoint, signer *Signer, w io.Writer) error {
	body := sha256.New() // the bytes before the signature record, when there is one
	if signer != nil {
		w = io.MultiWriter(w, body)
	}
	cw := csv.NewWriter(w) // buffered: csv.Writer has its own bufio.Writer
	if err := cw.Write(exportHeader); err != nil {
		return fmt.Errorf("export audit csv: %w", err)
	}
	var m csvManifest
	record := make([]string, len(exportHeader))
	err := exportEntries(ctx, db, f, head.Seq, func(e *Entry, selected bool) error {
		if m.First == 0 {
			m.First = e.Seq
		}
		m.Last = e.Seq
		if !selected {
			m.LeftOut++
			switch {
			case e.HashVersion < firstDigestVersion:
				m.UnprovenStub = e.Seq
			case signer != nil && !stubHashHolds(e):
				// Signing would vouch for a hash no verifier of the CSV
				// can recompute: stop, and leave the export unsigned.
				return stubHashError(e.Seq)
			}
			clear(record)
			record[0], record[len(record)-3], record[len(record)-2] = strconv.FormatInt(e.Seq, 10),
				hex.EncodeToString(e.PrevHash), hex.EncodeToString(e.Hash)
			return cw.Write(record)
		}
		m.Entries++
		record = append(record[:0],
			strconv.FormatInt(e.Seq, 10), e.At.Format(timeLayout),
			e.Actor.Issuer, e.Actor.Subject, e.Actor.Email, verifiedText(e), e.Tenant, e.Action,
			e.ObjectType, e.ObjectID, e.MessageID, e.OperationID, e.RequestID, e.Reason, string(e.Outcome),
			string(e.Before), string(e.After), e.RemoteAddr, e.UserAgent,
			hex.EncodeToString(e.PrevHash), hex.EncodeToString(e.Hash), hex.EncodeToString(e.Nonce))
		for i, v := range record {
			record[i] = inertCell(v)
		}
		return cw.Write(record)
	})
	if err != nil {
		// The reader is told where the file ends and why, in a record of
		// its own; a verifier refuses the file (no signature, no head).
		cut := make([]string, len(exportHeader))
		cut[0], cut[1] = csvExportError, inertCell(exportErrorText(err))
		if cw.Write(cut) == nil {
			cw.Flush()
		}
		return fmt.Errorf("export audit csv: %w", err)
	}
	m.Filter, m.HeadSeq, m.HeadHash = filterText(f), head.Seq, head.Hash
	if signer != nil {
		cw.Flush() // every byte before the signature record is in body
		if err := cw.Error(); err != nil {
			return fmt.Errorf("export audit csv: %w", err)
		}
		at, err := exportedAt(ctx, db)
		if err != nil {
			return err
		}
		m.Body, m.At, m.KeyID = body.Sum(nil), at, signer.KeyID()
		m.Signature = ed25519.Sign(signer.priv, m.signedBytes())
		if err := cw.Write(m.record()); err != nil {
			return fmt.Errorf("export audit csv: %w", err)
		}
	}
	// As many cells as the header, the ones a head lacks empty: a reader
	// that wants every record the same length reads the file.
	trailer := make([]string, len(exportHeader))
	copy(trailer, []string{csvChainHead, strconv.FormatInt(head.Seq, 10), head.HashHex()})
	if head.Signed() {
		// The reason is whatever whoever recorded the checkpoint typed:
		// a cell like any other a spreadsheet would run.
		copy(trailer[3:], []string{head.At.Format(timeLayout), inertCell(head.Reason), head.KeyID,
			hex.EncodeToString(head.PublicKey), hex.EncodeToString(head.Signature)})
	}
	trailer[8] = inertCell(csvFilterPrefix + m.Filter)
	if err := cw.Write(trailer); err != nil {
		return fmt.Errorf("export audit csv: %w", err)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("export audit csv: %w", err)
	}
	return nil
}

// The first cells of the CSV export's last two records, and the prefix of
// the chain-head record's filter cell; csvExportError starts the last
// record of an export that failed before its end (exportErrorText in its
// second cell), which has neither of the others.
const (
	csvChainHead       = "# chain-head"
	csvExportSignature = "# export-signature"
	csvFilterPrefix    = "filter:"
	csvExportError     = "# export-error"
)

// exportErrorText is what the last record (CSV) or line (JSON Lines) of an
// export that failed before its end says: that the file is incomplete,
// and why when the console can say (a coded error's message), never an
// internal error's detail (the console's log has it).
func exportErrorText(err error) string {
	return "The export stopped here, before its end: this file is incomplete and unsigned. " + quarantine.ErrorMessage(err)
}

// stubHashHolds reports whether stub e's stored hash is the hash of its
// seq, content digest and prev_hash (hash version 3), the hash a verifier
// of a CSV export takes on the export's signature.
func stubHashHolds(e *Entry) bool {
	return bytes.Equal(chainHash(e.Seq, e.ContentDigest, e.PrevHash), e.Hash)
}

// stubHashError is the error of a signed CSV export that passes over
// entry seq, whose stored hash is not the hash of its content digest and
// prev_hash (stubHashHolds): a conflict, with what the reader can do.
// The reader may be a tenant's auditor, who cannot see the entry nor run
// verify on the whole log.
func stubHashError(seq int64) error {
	return quarantine.Errorf(quarantine.ECONFLICT, "Audit entry #%d, which this export passes over without showing it "+
		"(another tenant's, or one the filter leaves out), holds a hash that is not the hash of its content, so a signed CSV export "+
		"cannot vouch for it: the log may have been altered there. Ask an auditor of every tenant, or whoever runs the console, "+
		"to run `console audit verify` and look into entry #%d. Meanwhile the JSON Lines export is not refused: its verifier "+
		"re-hashes that entry itself and reports it.", seq, seq)
}

// CheckCSVStubs returns the error ExportCSVSigned would stop at (a
// conflict naming the entry, stubHashError), before anything is written:
// the first entry of hash version 3 that an export of f up to seq end
// writes as a stub, whose stored hash is not the hash of its content
// digest and prev_hash. Nil when there is none. It reads only the stubs'
// seq, hashes and digests. Since migration 0070 the chain guard refuses
// such a row from the runtime role, but rows written before it, or by the
// owner with the guard off, can hold any hash.
func CheckCSVStubs(ctx context.Context, db Querier, f Filter, end int64) error {
	conds, args, ok, err := exportRange(ctx, db, f, end)
	if err != nil || !ok {
		return err
	}
	// IS NOT TRUE: the rows the export writes as stubs (selected false).
	rows, err := db.Query(ctx, `SELECT seq, prev_hash, hash, content_digest FROM audit_log
        WHERE seq BETWEEN @first AND @head AND hash_version >= `+strconv.Itoa(firstDigestVersion)+`
          AND (`+whereSQL(conds)+`) IS NOT TRUE ORDER BY seq`, args)
	if err != nil {
		return fmt.Errorf("check the export's stubs: %w", err)
	}
	defer rows.Close()
	var e Entry
	for rows.Next() {
		if err := rows.Scan(&e.Seq, &e.PrevHash, &e.Hash, &e.ContentDigest); err != nil {
			return fmt.Errorf("check the export's stubs: %w", err)
		}
		if !stubHashHolds(&e) {
			return stubHashError(e.Seq)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("check the export's stubs: %w", err)
	}
	return nil
}

// csvExportDomain starts the signed bytes of every CSV export manifest; a
// JSON Lines export's signature (exportDomain) covers other bytes.
const csvExportDomain = "quarantine-audit-export-csv-v1"

// csvManifest is what a CSV export's signature covers, and its record.
type csvManifest struct {
	Body             []byte // SHA-256 of the file before the signature record
	Filter           string
	First, Last      int64 // seqs of the first and last records; 0 when there are none
	Entries, LeftOut int64
	UnprovenStub     int64 // the newest stub of an entry before hash version 3; 0 for none
	HeadSeq          int64
	HeadHash         []byte
	At               time.Time
	KeyID            string
	Signature        []byte
}

// signedBytes is the manifest as its signature covers it: length-prefixed
// fields as in Checkpoint.signedBytes, in this order: the tag
// "quarantine-audit-export-csv-v1", the SHA-256 of the file before the
// signature record (32 bytes), the filter, the first and the last
// record's seq, the number of entries, of stubs, the seq of the newest
// stub before hash version 3, the chain head's seq (each 8 bytes,
// big-endian), the chain head's hash, the export time (timeLayout, UTC),
// the key id.
func (m *csvManifest) signedBytes() []byte {
	var b bytes.Buffer
	field(&b, []byte(csvExportDomain))
	field(&b, m.Body)
	field(&b, []byte(m.Filter))
	var n [8]byte
	for _, v := range []int64{m.First, m.Last, m.Entries, m.LeftOut, m.UnprovenStub, m.HeadSeq} {
		binary.BigEndian.PutUint64(n[:], uint64(v))
		field(&b, n[:])
	}
	field(&b, m.HeadHash)
	field(&b, []byte(m.At.UTC().Format(timeLayout)))
	field(&b, []byte(m.KeyID))
	return b.Bytes()
}

// csvManifestFields are the names of the fields of the signature
// record's first cell after "# export-signature", in order, each
// name=value, one space before each.
var csvManifestFields = []string{"first_seq", "last_seq", "entries", "left_out", "unproven_stub", "exported_at", "sha256", "key_id", "signature"}

// record is the signature record, as long as the header. The filter and
// the chain head are in the chain-head record after it.
func (m *csvManifest) record() []string {
	values := []string{strconv.FormatInt(m.First, 10), strconv.FormatInt(m.Last, 10), strconv.FormatInt(m.Entries, 10),
		strconv.FormatInt(m.LeftOut, 10), strconv.FormatInt(m.UnprovenStub, 10), m.At.UTC().Format(timeLayout),
		hex.EncodeToString(m.Body), m.KeyID, hex.EncodeToString(m.Signature)}
	cell := csvExportSignature
	for i, v := range values {
		cell += " " + csvManifestFields[i] + "=" + v
	}
	r := make([]string, len(exportHeader))
	r[0] = cell
	return r
}

// jsonEntry is one JSONL line; its keys are exportHeader.
type jsonEntry struct {
	Seq          int64           `json:"seq"`
	At           string          `json:"at"`
	ActorIssuer  string          `json:"actor_issuer"`
	ActorSubject string          `json:"actor_subject"`
	ActorEmail   string          `json:"actor_email"`
	ActorEmailOK *bool           `json:"actor_email_verified"`
	Tenant       string          `json:"tenant"`
	Action       string          `json:"action"`
	ObjectType   string          `json:"object_type"`
	ObjectID     string          `json:"object_id"`
	MessageID    string          `json:"message_id"`
	OperationID  string          `json:"operation_id"`
	RequestID    string          `json:"request_id"`
	Reason       string          `json:"reason"`
	Outcome      string          `json:"outcome"`
	Before       json.RawMessage `json:"before"`
	After        json.RawMessage `json:"after"`
	RemoteAddr   string          `json:"remote_addr"`
	UserAgent    string          `json:"user_agent"`
	PrevHash     *string         `json:"prev_hash"`
	Hash         string          `json:"hash"`
	// Nonce is, from hash version 3, the entry's nonce in hex, which its
	// content digest covers; absent before.
	Nonce string `json:"nonce,omitempty"`
	// HashVersion is the encoding Hash covers (hash.go); a JSONL key
	// only: the CSV names none.
	HashVersion int `json:"hash_version"`
}

// jsonStub is the JSONL line of an entry the filter left out: enough to
// link the entries around it, none of its content. From hash version 3 it
// carries the entry's content digest, from which, with seq and prev_hash,
// its hash is recomputed; before, neither (HashVersion 0: the stub cannot
// tell 1 from 2 without reading the content).
type jsonStub struct {
	Seq           int64   `json:"seq"`
	LeftOut       bool    `json:"left_out"`
	HashVersion   int     `json:"hash_version,omitempty"`
	ContentDigest string  `json:"content_digest,omitempty"`
	PrevHash      *string `json:"prev_hash"`
	Hash          string  `json:"hash"`
}

// jsonTrailer is the last JSONL line.
type jsonTrailer struct {
	ChainHead jsonHead    `json:"chain_head"`
	Export    *jsonExport `json:"export,omitempty"`
}

// jsonExport says what the export holds: Filter is what its entries were
// selected by ("" for all of them); entries it leaves out are stubs.
//
// The rest is present when the exporting console signed the export
// (ExportJSONLSigned): the seqs of its first and last lines (0 when it
// has none), when it was written, the SHA-256 of every byte of the file
// before the trailer, and an Ed25519 signature of the key that signs
// checkpoints over all of them and the filter (exportManifest).
type jsonExport struct {
	Filter     string `json:"filter"`
	FirstSeq   int64  `json:"first_seq,omitempty"`
	LastSeq    int64  `json:"last_seq,omitempty"`
	ExportedAt string `json:"exported_at,omitempty"`
	LinesHash  string `json:"lines_sha256,omitempty"`
	KeyID      string `json:"key_id,omitempty"`
	Signature  string `json:"signature,omitempty"`
}

// exportDomain starts the signed bytes of an export manifest, by its
// version: 2 since the chain head is signed with it, 1 before (read by the
// verifier only, for exports written then).
var exportDomain = map[int]string{1: "quarantine-audit-export-v1", 2: "quarantine-audit-export-v2"}

// exportVersion is the manifest every export is signed with.
const exportVersion = 2

// exportManifest is what an export's signature covers: length-prefixed
// fields as in Checkpoint.signedBytes, in this order: the tag
// "quarantine-audit-export-v2", the SHA-256 of the file before its
// trailer (32 bytes), the chain head's seq (8 bytes, big-endian) and
// hash, the filter, the first and the last line's seq (8 bytes each; 0
// for an export without lines), the export time (timeLayout, UTC), the
// key id. Version 1 ("quarantine-audit-export-v1") had no chain head: an
// export that selected nothing could be given a later checkpoint's head
// and still verify (VerifyExport binds such a head by time only).
func exportManifest(version int, linesHash []byte, head Checkpoint, filter string, first, last int64, at time.Time, keyID string) []byte {
	var b bytes.Buffer
	field(&b, []byte(exportDomain[version]))
	field(&b, linesHash)
	var seq [8]byte
	if version >= 2 {
		binary.BigEndian.PutUint64(seq[:], uint64(head.Seq))
		field(&b, seq[:])
		field(&b, head.Hash)
	}
	field(&b, []byte(filter))
	binary.BigEndian.PutUint64(seq[:], uint64(first))
	field(&b, seq[:])
	binary.BigEndian.PutUint64(seq[:], uint64(last))
	field(&b, seq[:])
	field(&b, []byte(at.UTC().Format(timeLayout)))
	field(&b, []byte(keyID))
	return b.Bytes()
}

// jsonHead is the head an export ends at; the signature fields are present
// when it is a signed checkpoint.
type jsonHead struct {
	Seq       int64  `json:"seq"`
	Hash      string `json:"hash"`
	At        string `json:"signed_at,omitempty"`
	Reason    string `json:"reason,omitempty"`
	KeyID     string `json:"key_id,omitempty"`
	PublicKey string `json:"public_key,omitempty"`
	Signature string `json:"signature,omitempty"`
}

// ExportJSONL writes the entries f selects to w as JSON Lines, oldest first,
// streaming like ExportCSV. Each line is an object with the column names of
// audit_log as keys: at in UTC with microseconds, before and after as the
// canonical JSON the hash covers (null for NULL), prev_hash (null for seq 1)
// and hash in hex, actor_email_verified null for entries of hash version 1,
// nonce in hex for entries of hash version 3 (absent before), and one key
// more than the CSV's columns: hash_version, the encoding the hash covers
// (1, 2 or 3; see hash.go).
// The last line is {"chain_head":{"seq":N,"hash":"..."},"export":{"filter":"..."}},
// the head the export ends at, with "signed_at", "reason", "key_id",
// "public_key" and "signature" (hex) when head is a signed checkpoint, and
// what the entries were selected by ("" for all of them). The lines run
// without a gap from the first entry f selects to head: an entry f leaves
// out is the line
//
//	{"seq":N,"left_out":true,"hash_version":3,"content_digest":"...","prev_hash":"...","hash":"..."}
//
// so that the chain can be followed to the signed head without showing
// what the entry says: the content digest (hash.go) is a SHA-256 of the
// entry's nonce and fields, from which with seq and prev_hash the verifier
// recomputes the stub's hash. The stub shows no nonce, so its digest and
// hash confirm no guess of the entry's fields. A stub of an entry appended
// before hash version 3 has neither hash_version nor content_digest, and
// its hash cannot be recomputed, but it is a hash of the entry's fields
// alone: it confirms a guess of all of them.
//
// The signature of the chain head covers only the head: an export written
// by ExportJSONL says nothing signed of which entries it selected (its
// filter), where it starts, or what its lines held, so whoever holds the
// file can cut its first lines, change its filter, or turn an entry into
// a stub (its nonce is shown, so its content digest is computable)
// without the chain telling. ExportJSONLSigned signs all of that.
//
// An export that fails before its end writes, instead of its last line,
// {"export_error":"<exportErrorText>"} and returns the error.
//
// f's Limit is ignored; Before and After bound the seq range. It returns an
// an invalid quarantine.Error for an invalid f.
func ExportJSONL(ctx context.Context, db Querier, f Filter, head Checkpoint, w io.Writer) error {
	return exportJSONL(ctx, db, f, head, nil, w)
}

// ExportJSONLSigned is ExportJSONL with the export signed by signer (the
// key that signs the checkpoints): its trailer's "export" also holds
// "first_seq" and "last_seq" (the seqs of its first and last lines,
// absent when it has none), "exported_at", "lines_sha256" (the SHA-256 of
// every byte of the file before the trailer), "key_id" and "signature", an
// Ed25519 signature over those, the filter and the chain head
// (exportManifest). VerifyExport checks it: no line can be edited, added
// or taken off, nor the filter or the head changed, without the signature
// failing.
func ExportJSONLSigned(ctx context.Context, db Querier, f Filter, head Checkpoint, signer *Signer, w io.Writer) error {
	return exportJSONL(ctx, db, f, head, signer, w)
}

func exportJSONL(ctx context.Context, db Querier, f Filter, head Checkpoint, signer *Signer, w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	lines := sha256.New()
	enc := json.NewEncoder(io.MultiWriter(bw, lines))
	var first, last int64
	// Keep the text as stored: with HTML escaping, before and after would no
	// longer be the bytes the hash covers.
	enc.SetEscapeHTML(false)
	var line jsonEntry
	err := exportEntries(ctx, db, f, head.Seq, func(e *Entry, selected bool) error {
		if first == 0 {
			first = e.Seq
		}
		last = e.Seq
		if !selected {
			stub := jsonStub{Seq: e.Seq, LeftOut: true, Hash: hex.EncodeToString(e.Hash)}
			if e.HashVersion >= firstDigestVersion {
				stub.HashVersion, stub.ContentDigest = e.HashVersion, hex.EncodeToString(e.ContentDigest)
			}
			if e.PrevHash != nil {
				prev := hex.EncodeToString(e.PrevHash)
				stub.PrevHash = &prev
			}
			return enc.Encode(&stub)
		}
		line = jsonEntry{
			Seq: e.Seq, At: e.At.Format(timeLayout),
			ActorIssuer: e.Actor.Issuer, ActorSubject: e.Actor.Subject, ActorEmail: e.Actor.Email,
			Tenant: e.Tenant, Action: e.Action, ObjectType: e.ObjectType, ObjectID: e.ObjectID,
			MessageID: e.MessageID, OperationID: e.OperationID, RequestID: e.RequestID,
			Reason: e.Reason, Outcome: string(e.Outcome), Before: e.Before, After: e.After,
			RemoteAddr: e.RemoteAddr, UserAgent: e.UserAgent, Hash: hex.EncodeToString(e.Hash), HashVersion: e.HashVersion,
			Nonce: hex.EncodeToString(e.Nonce),
		}
		if e.PrevHash != nil {
			prev := hex.EncodeToString(e.PrevHash)
			line.PrevHash = &prev
		}
		if e.HashVersion != 1 {
			line.ActorEmailOK = &e.Actor.EmailVerified
		}
		return enc.Encode(&line)
	})
	if err != nil {
		// The reader is told where the file ends and why, on a line of its
		// own; a verifier refuses the file (no trailer).
		if enc.Encode(map[string]string{"export_error": exportErrorText(err)}) == nil {
			_ = bw.Flush() // the export's error is the one to report
		}
		return fmt.Errorf("export audit jsonl: %w", err)
	}
	trailer := jsonTrailer{ChainHead: jsonHead{Seq: head.Seq, Hash: head.HashHex()}, Export: &jsonExport{Filter: filterText(f)}}
	if head.Signed() {
		trailer.ChainHead.At, trailer.ChainHead.Reason, trailer.ChainHead.KeyID = head.At.Format(timeLayout), head.Reason, head.KeyID
		trailer.ChainHead.PublicKey = hex.EncodeToString(head.PublicKey)
		trailer.ChainHead.Signature = hex.EncodeToString(head.Signature)
	}
	if signer != nil {
		x := trailer.Export
		at, err := exportedAt(ctx, db)
		if err != nil {
			return err
		}
		sum := lines.Sum(nil)
		x.FirstSeq, x.LastSeq, x.ExportedAt, x.LinesHash, x.KeyID = first, last, at.Format(timeLayout), hex.EncodeToString(sum), signer.KeyID()
		x.Signature = hex.EncodeToString(ed25519.Sign(signer.priv, exportManifest(exportVersion, sum, head, x.Filter, first, last, at, x.KeyID)))
	}
	if err := enc.Encode(&trailer); err != nil {
		return fmt.Errorf("export audit jsonl: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export audit jsonl: %w", err)
	}
	return nil
}

// formulaStart are the first bytes that make a spreadsheet read a cell as
// a formula (OWASP's list), and the quote that marks a cell as text.
const formulaStart = "=+-@\t\r'"

// inertCell is v as a CSV export writes it: with one "'" in front when it
// starts with a byte of formulaStart. Every value that starts with "'" gets
// one more, so CSVValue can always take one off: no two values share a
// cell.
//
// A value holding a character of unsafeRune is written as "'" and the value
// quoted with strconv.QuoteToASCII ('"..."). No other value is written
// starting with '", so CSVValue tells the two apart: a value that starts
// with "'" gets one more.
func inertCell(v string) string {
	if strings.IndexFunc(v, unsafeRune) >= 0 {
		return "'" + strconv.QuoteToASCII(v)
	}
	if v != "" && strings.IndexByte(formulaStart, v[0]) >= 0 {
		return "'" + v
	}
	return v
}

// unsafeRune reports the characters a CSV export does not write raw:
// control characters but tab and line feed (ESC starts terminal
// sequences), DEL, the C1 controls, and the bidirectional-text controls
// (U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069), which reorder
// how a value is displayed.
func unsafeRune(r rune) bool {
	switch {
	case r == '\t' || r == '\n':
		return false
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// CSVValue is the value a cell of ExportCSV's stands for: the cell without
// the one leading "'" the export put in front of values that start like a
// formula (or with "'"), or the quoted value after "'" unquoted. Re-hash
// an exported entry from these values.
func CSVValue(cell string) string {
	if strings.HasPrefix(cell, `'"`) {
		if v, err := strconv.Unquote(cell[1:]); err == nil {
			return v
		}
	}
	return strings.TrimPrefix(cell, "'")
}

// verifiedText is actor_email_verified as the CSV export writes it.
func verifiedText(e *Entry) string {
	if e.HashVersion == 1 {
		return ""
	}
	return strconv.FormatBool(e.Actor.EmailVerified)
}

// exportConds returns the conditions and arguments that select f's
// entries up to seq head, and false when f selects none.
func exportConds(f Filter, head int64) ([]string, pgx.NamedArgs, bool, error) {
	f.Limit = 0 // a page size, not an export bound
	if err := f.Validate(); err != nil {
		return nil, nil, false, err
	}
	s := f.exportSelection()
	if !s.visible || head == 0 {
		return nil, nil, false, nil
	}
	// Seqs are assigned in commit order under the append lock, so every
	// entry up to the head is already visible and nothing later slips in.
	s.conds = append(s.conds, condUpToHead)
	s.args["head"] = head
	return s.conds, s.args, true, nil
}

// exportSelection is what an export of f selects below its head: f's
// selection and its cursor, each a filter its trailer names (filterText).
func (f *Filter) exportSelection() *selection {
	s := f.selection()
	switch {
	case f.Before != 0:
		s.add("before", strconv.FormatInt(f.Before, 10), pgx.NamedArgs{"cursor": f.Before}, condOlder)
	case f.After != 0:
		s.add("after", strconv.FormatInt(f.After, 10), pgx.NamedArgs{"cursor": f.After}, condNewer)
	}
	return s
}

// ExportTenants returns the tenants of f.Tenants (the exporter's scope, a
// list of tenants by name) in which f selects at least one entry of the log
// as it is now, sorted: the tenants an export of f takes entries from, and
// so the tenants its audit rows may name f in. One probe per tenant of the
// scope, each stopping at the first entry it finds (the tenant index, or
// the filter's own when that is more selective); a tenant where f selects
// nothing is read whole, as the export's own read would read it. It
// returns nil when f.Tenants names no tenant (nil, or every tenant), and an
// invalid quarantine.Error for an invalid f.
func ExportTenants(ctx context.Context, db Querier, f Filter) ([]string, error) {
	if f.Tenants == nil || slices.Contains(f.Tenants, AllTenants) {
		return nil, nil
	}
	f.Limit = 0 // a page size, not an export bound
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("read the tenants an export takes entries from: %w", err)
	}
	sel := f.exportSelection()
	if !sel.visible {
		return nil, nil
	}
	rows, err := db.Query(ctx, `SELECT s.t FROM unnest(@tenants::text[]) AS s(t)
    WHERE EXISTS (SELECT 1 FROM audit_log WHERE `+whereSQL(sel.conds, "tenant = s.t")+`)
    ORDER BY s.t`, sel.args)
	if err != nil {
		return nil, fmt.Errorf("read the tenants an export takes entries from: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read the tenants an export takes entries from: %w", err)
	}
	return out, nil
}

// Checkpoints from the last entry an export selects up to its head, oldest
// first.
const selectExportEnds = `SELECT ` + checkpointColumns + ` FROM audit_checkpoints
    WHERE seq >= $1 AND seq < $2 ORDER BY seq`

// ExportEnd returns the checkpoint an export of the entries f selects up to
// head should end at: the first checkpoint at or after the last of those
// entries whose signature verifies with keys (the console's own key), or
// head when there is none before it. A filtered export runs without a gap
// from its first entry to the checkpoint it ends at, a stub for each entry
// the filter leaves out; ending at the next checkpoint, not at the head,
// keeps the stubs past its last entry to one checkpoint interval
// (AUDIT_CHECKPOINT_EVERY entries at most), however much newer the log is.
// A checkpoint whose signature does not verify (anyone with the runtime
// role's credentials may insert one) is passed over. head is the signed
// head Record returned for the export; it returns head for an empty log,
// or when f selects nothing, and an invalid quarantine.Error for an
// invalid f.
func ExportEnd(ctx context.Context, db Querier, f Filter, head Checkpoint, keys *KeySet) (Checkpoint, error) {
	conds, args, ok, err := exportConds(f, head.Seq)
	if err != nil || !ok {
		return head, err
	}
	var last *int64
	if err := db.QueryRow(ctx, `SELECT max(seq) FROM audit_log WHERE `+whereSQL(conds), args).Scan(&last); err != nil {
		return Checkpoint{}, fmt.Errorf("query the last entry to export: %w", err)
	}
	if last == nil {
		return head, nil
	}
	rows, err := db.Query(ctx, selectExportEnds, *last, head.Seq)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("query the checkpoints after seq %d: %w", *last, err)
	}
	defer rows.Close()
	for rows.Next() {
		c, err := scanCheckpoint(rows)
		if err != nil {
			return Checkpoint{}, fmt.Errorf("read checkpoint: %w", err)
		}
		if c.VerifySignature(keys) == nil {
			return c, nil
		}
	}
	if err := rows.Err(); err != nil {
		return Checkpoint{}, fmt.Errorf("read checkpoints after seq %d: %w", *last, err)
	}
	return head, nil
}

// exportContent are the columns of entryColumns between seq and prev_hash:
// what an entry says, which a stub leaves out.
var exportContent = strings.Split(`at, actor_issuer, actor_subject, actor_email, actor_email_verified, tenant, action,
    object_type, object_id, message_id, operation_id, request_id, reason, outcome,
    before::text, after::text, remote_addr, user_agent`, ",")

// exportColumns is entryColumns with the content of an entry f leaves out
// NULL (it is read from the row only for the entries f selects: no other
// tenant's JSON is detoasted or sent), and its nonce NULL too (with it,
// a stub's digest would confirm a guess of the content), then selected.
var exportColumns = func() string {
	cols := []string{"seq"}
	for _, c := range exportContent {
		cols = append(cols, "CASE WHEN selected THEN "+strings.TrimSpace(c)+" END")
	}
	return strings.Join(append(cols, "prev_hash", "hash", "hash_version", "content_digest",
		"CASE WHEN selected THEN nonce END", "selected"), ", ")
}()

// exportEntries calls fn for each entry from the first one f selects up to
// seq end, oldest first, as the rows arrive: with selected false for those
// f leaves out, which an export writes as stubs (seq, prev_hash, hash,
// hash version and content digest, stored beside the content: no content
// and no nonce, which are not read either), so that the chain runs unbroken
// from the first entry exported to the signed checkpoint at end.
func exportEntries(ctx context.Context, db Querier, f Filter, end int64, fn func(e *Entry, selected bool) error) error {
	conds, args, ok, err := exportRange(ctx, db, f, end)
	if err != nil || !ok {
		return err
	}
	// The subquery's ORDER BY keeps it from being merged into the outer
	// query, so the conditions are evaluated once a row, not once a column.
	// IS TRUE: a condition on a value the entry does not hold (a request's
	// item entry without after.request: a download, a close) is NULL, which
	// leaves the entry out (a stub), as CheckCSVStubs' IS NOT TRUE does.
	rows, err := db.Query(ctx, `SELECT `+exportColumns+` FROM (
        SELECT *, (`+whereSQL(conds)+`) IS TRUE AS selected FROM audit_log
        WHERE seq BETWEEN @first AND @head ORDER BY seq) AS l ORDER BY seq`, args)
	if err != nil {
		return fmt.Errorf("query entries: %w", err)
	}
	defer rows.Close()
	n := len(rows.FieldDescriptions())
	stub := make([]any, n) // nil: a column not scanned
	var selected bool
	var version *int16
	for rows.Next() {
		var e Entry
		clear(stub)
		stub[n-1] = &selected
		if err := rows.Scan(stub...); err != nil {
			return fmt.Errorf("read entry: %w", err)
		}
		if selected {
			row := selectedRow{Rows: rows}
			if e, err = scanEntry(&row); err != nil {
				return fmt.Errorf("read entry: %w", err)
			}
		} else {
			stub[0], stub[n-6], stub[n-5], stub[n-4], stub[n-3] = &e.Seq, &e.PrevHash, &e.Hash, &version, &e.ContentDigest
			if err := rows.Scan(stub...); err != nil {
				return fmt.Errorf("read entry: %w", err)
			}
			if version != nil {
				e.HashVersion = int(*version)
			}
		}
		if err := fn(&e, selected); err != nil {
			return fmt.Errorf("write seq %d: %w", e.Seq, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read entries: %w", err)
	}
	return nil
}

// exportRange returns exportConds' conditions and arguments, with @first
// the seq of the first entry f selects up to seq end: an export runs from
// there to end. False when f selects none.
func exportRange(ctx context.Context, db Querier, f Filter, end int64) ([]string, pgx.NamedArgs, bool, error) {
	conds, args, ok, err := exportConds(f, end)
	if err != nil || !ok {
		return nil, nil, false, err
	}
	var first *int64
	if err := db.QueryRow(ctx, `SELECT min(seq) FROM audit_log WHERE `+whereSQL(conds), args).Scan(&first); err != nil {
		return nil, nil, false, fmt.Errorf("query the first entry: %w", err)
	}
	if first == nil {
		return nil, nil, false, nil
	}
	args["first"] = *first
	return conds, args, true, nil
}

// selectedRow is a row of exportEntries' query: the entry's columns, then
// whether the filter selects it.
type selectedRow struct {
	pgx.Rows
	selected bool
}

func (r *selectedRow) Scan(dest ...any) error { return r.Rows.Scan(append(dest, &r.selected)...) }

// filterText describes what f selects, as the export's trailer records it:
// "" for every entry. It names the filters of the export's own query
// (exportSelection), so none that selects can be left out.
func filterText(f Filter) string {
	return strings.Join(f.exportSelection().named, " ")
}

// exportedAt is the time a signed export says it was written: the
// database's clock, which dated every entry and checkpoint it holds (a
// console's own clock may be behind the chain head it signs for).
func exportedAt(ctx context.Context, db Querier) (time.Time, error) {
	var at time.Time
	if err := db.QueryRow(ctx, selectClock).Scan(&at); err != nil {
		return time.Time{}, fmt.Errorf("export audit: read the database's clock: %w", err)
	}
	return at.UTC().Truncate(time.Microsecond), nil
}

// Printable is s as a terminal may show it: every character unsafeRune
// names, and line feeds, written as Go escapes (`\x1b`, `\u202e`, `\n`).
// What a verification says may hold text from the file or database it
// read (a key id, say); written raw, a carriage return and an escape
// sequence could wipe its "BROKEN" and write "ok" in its place.
func Printable(s string) string {
	escaped := func(r rune) bool { return r == '\n' || unsafeRune(r) }
	if !strings.ContainsFunc(s, escaped) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if escaped(r) {
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// keyName is key id as a message names it: as it is when it is plain
// printable ASCII, quoted otherwise (a key id read from a file or a
// checkpoint row is anyone's text).
func keyName(id string) string {
	if q := strconv.QuoteToASCII(id); q[1:len(q)-1] != id {
		return q
	}
	return id
}
