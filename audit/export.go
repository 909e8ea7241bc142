package audit

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

const chainHead = `SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1`

// exportHeader names the CSV columns and the JSONL keys, in order.
var exportHeader = []string{
	"seq", "at", "actor_issuer", "actor_subject", "actor_email", "actor_email_verified", "tenant", "action",
	"object_type", "object_id", "message_id", "operation_id", "request_id", "reason", "outcome",
	"before", "after", "remote_addr", "user_agent", "prev_hash", "hash",
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
// with head: the head of the chain the export ends at (entries appended
// later are left out), and when head is a signed checkpoint its signature
// (public key and signature in hex), which anyone with the public key can
// check. It has as many cells as the header (the rest empty), so readers
// that want records of one length read it, and one that treats '#' as a
// comment skips it.
//
// f's Limit is ignored; Before and After bound the seq range. It returns an
// an invalid quarantine.Error for an invalid f.
func ExportCSV(ctx context.Context, db Querier, f Filter, head Checkpoint, w io.Writer) error {
	cw := csv.NewWriter(w) // buffered: csv.Writer has its own bufio.Writer
	if err := cw.Write(exportHeader); err != nil {
		return fmt.Errorf("export audit csv: %w", err)
	}
	record := make([]string, len(exportHeader))
	err := exportEntries(ctx, db, f, head.Seq, func(e *Entry) error {
		record = append(record[:0],
			strconv.FormatInt(e.Seq, 10), e.At.Format(timeLayout),
			e.Actor.Issuer, e.Actor.Subject, e.Actor.Email, verifiedText(e), e.Tenant, e.Action,
			e.ObjectType, e.ObjectID, e.MessageID, e.OperationID, e.RequestID, e.Reason, string(e.Outcome),
			string(e.Before), string(e.After), e.RemoteAddr, e.UserAgent,
			hex.EncodeToString(e.PrevHash), hex.EncodeToString(e.Hash))
		for i, v := range record {
			record[i] = inertCell(v)
		}
		return cw.Write(record)
	})
	if err != nil {
		return fmt.Errorf("export audit csv: %w", err)
	}
	// As many cells as the header, the ones a head lacks empty: a reader
	// that wants every record the same length reads the file.
	trailer := make([]string, len(exportHeader))
	copy(trailer, []string{"# chain-head", strconv.FormatInt(head.Seq, 10), head.HashHex()})
	if head.Signed() {
		copy(trailer[3:], []string{head.At.Format(timeLayout), head.Reason, head.KeyID,
			hex.EncodeToString(head.PublicKey), hex.EncodeToString(head.Signature)})
	}
	if err := cw.Write(trailer); err != nil {
		return fmt.Errorf("export audit csv: %w", err)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("export audit csv: %w", err)
	}
	return nil
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
}

// jsonTrailer is the last JSONL line.
type jsonTrailer struct {
	ChainHead jsonHead `json:"chain_head"`
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
// and hash in hex, actor_email_verified null for entries of hash version 1.
// The last line is {"chain_head":{"seq":N,"hash":"..."}}, the head the
// export ends at, with "signed_at", "reason", "key_id", "public_key" and
// "signature" (hex) when head is a signed checkpoint.
//
// f's Limit is ignored; Before and After bound the seq range. It returns an
// an invalid quarantine.Error for an invalid f.
func ExportJSONL(ctx context.Context, db Querier, f Filter, head Checkpoint, w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	// Keep the text as stored: with HTML escaping, before and after would no
	// longer be the bytes the hash covers.
	enc.SetEscapeHTML(false)
	var line jsonEntry
	err := exportEntries(ctx, db, f, head.Seq, func(e *Entry) error {
		line = jsonEntry{
			Seq: e.Seq, At: e.At.Format(timeLayout),
			ActorIssuer: e.Actor.Issuer, ActorSubject: e.Actor.Subject, ActorEmail: e.Actor.Email,
			Tenant: e.Tenant, Action: e.Action, ObjectType: e.ObjectType, ObjectID: e.ObjectID,
			MessageID: e.MessageID, OperationID: e.OperationID, RequestID: e.RequestID,
			Reason: e.Reason, Outcome: string(e.Outcome), Before: e.Before, After: e.After,
			RemoteAddr: e.RemoteAddr, UserAgent: e.UserAgent, Hash: hex.EncodeToString(e.Hash),
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
		return fmt.Errorf("export audit jsonl: %w", err)
	}
	trailer := jsonTrailer{ChainHead: jsonHead{Seq: head.Seq, Hash: head.HashHex()}}
	if head.Signed() {
		trailer.ChainHead.At, trailer.ChainHead.Reason, trailer.ChainHead.KeyID = head.At.Format(timeLayout), head.Reason, head.KeyID
		trailer.ChainHead.PublicKey = hex.EncodeToString(head.PublicKey)
		trailer.ChainHead.Signature = hex.EncodeToString(head.Signature)
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
func inertCell(v string) string {
	if v != "" && strings.IndexByte(formulaStart, v[0]) >= 0 {
		return "'" + v
	}
	return v
}

// CSVValue is the value a cell of ExportCSV's stands for: the cell without
// the one leading "'" the export put in front of values that start like a
// formula (or with "'"). Re-hash an exported entry from these values.
func CSVValue(cell string) string { return strings.TrimPrefix(cell, "'") }

// verifiedText is actor_email_verified as the CSV export writes it.
func verifiedText(e *Entry) string {
	if e.HashVersion == 1 {
		return ""
	}
	return strconv.FormatBool(e.Actor.EmailVerified)
}

// exportEntries calls fn for each entry f selects up to seq head, oldest
// first, as the rows arrive.
func exportEntries(ctx context.Context, db Querier, f Filter, head int64, fn func(*Entry) error) error {
	f.Limit = 0 // a page size, not an export bound
	if err := f.Validate(); err != nil {
		return err
	}
	conds, args, visible := f.where()
	if !visible || head == 0 {
		return nil
	}
	// Seqs are assigned in commit order under the append lock, so every
	// entry up to the head is already visible and nothing later slips in.
	conds = append(conds, condUpToHead)
	args["head"] = head
	switch {
	case f.Before != 0:
		conds = append(conds, condOlder)
		args["cursor"] = f.Before
	case f.After != 0:
		conds = append(conds, condNewer)
		args["cursor"] = f.After
	}
	rows, err := db.Query(ctx, selectEntries+whereSQL(conds)+` ORDER BY seq`, args)
	if err != nil {
		return fmt.Errorf("query entries: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return fmt.Errorf("read entry: %w", err)
		}
		if err := fn(&e); err != nil {
			return fmt.Errorf("write seq %d: %w", e.Seq, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read entries: %w", err)
	}
	return nil
}
