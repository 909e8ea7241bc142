package audit

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/jackc/pgx/v5"
)

const chainHead = `SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1`

// exportHeader names the CSV columns and the JSONL keys, in order.
var exportHeader = []string{
	"seq", "at", "actor_issuer", "actor_subject", "actor_email", "tenant", "action",
	"object_type", "object_id", "message_id", "operation_id", "request_id", "reason", "outcome",
	"before", "after", "remote_addr", "user_agent", "prev_hash", "hash",
}

// ExportCSV writes the entries f selects to w as CSV, oldest first, streaming
// them from the database cursor (memory does not grow with the number of
// rows). The first record is the header (the column names of audit_log);
// then one record per entry, at in UTC with microseconds, before and after
// as canonical JSON (empty for NULL), hashes in hex. The last record is the
// trailer "# chain-head,<seq>,<hash>": the head of the whole chain when the
// export started, which bounds the export (entries appended meanwhile are
// left out). A CSV reader that treats '#' as a comment skips it.
//
// f's Limit is ignored; Before and After bound the seq range. It returns an
// an invalid quarantine.Error for an invalid f.
func ExportCSV(ctx context.Context, db Querier, f Filter, w io.Writer) error {
	cw := csv.NewWriter(w) // buffered: csv.Writer has its own bufio.Writer
	if err := cw.Write(exportHeader); err != nil {
		return fmt.Errorf("export audit csv: %w", err)
	}
	record := make([]string, len(exportHeader))
	head, err := exportEntries(ctx, db, f, func(e *Entry) error {
		record = append(record[:0],
			strconv.FormatInt(e.Seq, 10), e.At.Format(timeLayout),
			e.Actor.Issuer, e.Actor.Subject, e.Actor.Email, e.Tenant, e.Action,
			e.ObjectType, e.ObjectID, e.MessageID, e.OperationID, e.RequestID, e.Reason, string(e.Outcome),
			string(e.Before), string(e.After), e.RemoteAddr, e.UserAgent,
			hex.EncodeToString(e.PrevHash), hex.EncodeToString(e.Hash))
		return cw.Write(record)
	})
	if err != nil {
		return fmt.Errorf("export audit csv: %w", err)
	}
	if err := cw.Write([]string{"# chain-head", strconv.FormatInt(head.seq, 10), hex.EncodeToString(head.hash)}); err != nil {
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
	ChainHead struct {
		Seq  int64  `json:"seq"`
		Hash string `json:"hash"`
	} `json:"chain_head"`
}

// ExportJSONL writes the entries f selects to w as JSON Lines, oldest first,
// streaming like ExportCSV. Each line is an object with the column names of
// audit_log as keys: at in UTC with microseconds, before and after as the
// canonical JSON the hash covers (null for NULL), prev_hash (null for seq 1)
// and hash in hex. The last line is {"chain_head":{"seq":N,"hash":"..."}},
// the head of the whole chain when the export started.
//
// f's Limit is ignored; Before and After bound the seq range. It returns an
// an invalid quarantine.Error for an invalid f.
func ExportJSONL(ctx context.Context, db Querier, f Filter, w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	// Keep the text as stored: with HTML escaping, before and after would no
	// longer be the bytes the hash covers.
	enc.SetEscapeHTML(false)
	var line jsonEntry
	head, err := exportEntries(ctx, db, f, func(e *Entry) error {
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
		return enc.Encode(&line)
	})
	if err != nil {
		return fmt.Errorf("export audit jsonl: %w", err)
	}
	var trailer jsonTrailer
	trailer.ChainHead.Seq = head.seq
	trailer.ChainHead.Hash = hex.EncodeToString(head.hash)
	if err := enc.Encode(&trailer); err != nil {
		return fmt.Errorf("export audit jsonl: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export audit jsonl: %w", err)
	}
	return nil
}

type headRef struct {
	seq  int64
	hash []byte
}

// exportEntries reads the chain head, then calls fn for each entry f selects
// up to that head, oldest first, as the rows arrive.
func exportEntries(ctx context.Context, db Querier, f Filter, fn func(*Entry) error) (headRef, error) {
	f.Limit = 0 // a page size, not an export bound
	if err := f.Validate(); err != nil {
		return headRef{}, err
	}
	var head headRef
	err := db.QueryRow(ctx, chainHead).Scan(&head.seq, &head.hash)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return headRef{}, fmt.Errorf("read chain head: %w", err)
	}
	conds, args, visible := f.where()
	if !visible || head.seq == 0 {
		return head, nil
	}
	// Seqs are assigned in commit order under the append lock, so every
	// entry up to the head is already visible and nothing later slips in.
	conds = append(conds, condUpToHead)
	args["head"] = head.seq
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
		return headRef{}, fmt.Errorf("query entries: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return headRef{}, fmt.Errorf("read entry: %w", err)
		}
		if err := fn(&e); err != nil {
			return headRef{}, fmt.Errorf("write seq %d: %w", e.Seq, err)
		}
	}
	if err := rows.Err(); err != nil {
		return headRef{}, fmt.Errorf("read entries: %w", err)
	}
	return head, nil
}
