package web_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// revExportLine is one line of a JSON Lines audit export, as exported: an
// entry, a stub (left_out) or the trailer (seq 0).
type revExportLine struct {
	Seq          int64           `json:"seq"`
	LeftOut      bool            `json:"left_out"`
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
	// fix-audit-salt: hash version 3's keys. A stub carries its content
	// digest; an entry of version 3 its nonce.
	HashVersion   int    `json:"hash_version"`
	ContentDigest string `json:"content_digest"`
	Nonce         string `json:"nonce"`
}

// revHash is an entry's hash as docs/access.md and audit/hash.go describe
// the encoding (v3): what anyone holding an export can compute offline.
// The content digest is SHA-256 over the tag, the entry's nonce when the
// line shows one, and the content fields; the hash is SHA-256 over the tag,
// seq, that digest and prev_hash. A stub shows no nonce, so a guess at
// the content of the entry behind it is hashed without one.
//
// fix-audit-salt: the review's revHash was the v2 encoding, which
// fix-audit-v3 replaced for every entry appended since.
func revHash(l revExportLine) string {
	field := func(h hash.Hash, b []byte) {
		var hdr [9]byte
		hdr[0] = 1
		binary.BigEndian.PutUint64(hdr[1:], uint64(len(b)))
		h.Write(hdr[:])
		h.Write(b)
	}
	nullable := func(h hash.Hash, b []byte) {
		if b == nil {
			h.Write([]byte{0})
			return
		}
		field(h, b)
	}
	d := sha256.New()
	field(d, []byte("quarantine-audit-v3-content"))
	if l.Nonce != "" {
		nonce, err := hex.DecodeString(l.Nonce)
		if err != nil {
			panic(err)
		}
		field(d, nonce)
	}
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], uint64(l.Seq))
	field(d, seq[:])
	field(d, []byte(l.At))
	field(d, []byte(l.ActorIssuer))
	field(d, []byte(l.ActorSubject))
	field(d, []byte(l.ActorEmail))
	verified := []byte{0}
	if l.ActorEmailOK != nil && *l.ActorEmailOK {
		verified[0] = 1
	}
	field(d, verified)
	for _, s := range []string{l.Tenant, l.Action, l.ObjectType, l.ObjectID, l.MessageID, l.OperationID, l.RequestID, l.Reason, l.Outcome} {
		field(d, []byte(s))
	}
	raw := func(m json.RawMessage) []byte {
		if len(m) == 0 || string(m) == "null" {
			return nil
		}
		return m
	}
	nullable(d, raw(l.Before))
	nullable(d, raw(l.After))
	field(d, []byte(l.RemoteAddr))
	field(d, []byte(l.UserAgent))

	h := sha256.New()
	field(h, []byte("quarantine-audit-v3"))
	field(h, seq[:])
	field(h, d.Sum(nil))
	var prev []byte
	if l.PrevHash != nil {
		var err error
		prev, err = hex.DecodeString(*l.PrevHash)
		if err != nil {
			panic(err)
		}
	}
	nullable(h, prev)
	return hex.EncodeToString(h.Sum(nil))
}

// revPurgeAfter is the canonical JSON (jsonb's key order: shorter keys
// first, compacted) of a retention row's after.
func revPurgeAfter(by []string, to, from, pass string, rows int64, partition string) json.RawMessage {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	return json.RawMessage(fmt.Sprintf(`{"by":[%s],"to":%s,"from":%s,"pass":%s,"rows":%d,"partition":%s}`,
		strings.Join(by, ","), q(to), q(from), q(pass), rows, q(partition)))
}

// TestRevTenantExportStubsGiveAwayOtherTenantsPurges: an auditor of acme
// only exports the audit log. A retention run wrote acme's row
// (retention.purge.tenant), globex's, then the run's own row naming every
// tenant and its counts; acme's export holds acme's row and stubs for the
// other two (seq, prev_hash, hash: "nothing of what the entry says",
// docs/access.md). But the hash has no key and every field of the run's
// row is either in acme's own row (the time, shared by one append; the
// pass; the partition; acme's counts) or small enough to guess: when acme's
// dead letters are the oldest and newest the run removed (a busy tenant's
// usually are, on a whole day's partition), the run's range is acme's. So
// acme's auditor tries tenant names and counts against the stub's hash
// offline and learns that globex exists and that 3 of its discarded dead
// letters went, which the docs say nothing in acme's view tells
// ("Nothing in it names another tenant or counts theirs").
func TestRevTenantExportStubsGiveAwayOtherTenantsPurges(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	day := dlq.Day(time.Now()).AddDate(0, 0, -40)
	letter := func(tenant string, at time.Time) testfactory.Letter {
		return testfactory.Letter{Tenant: tenant, ItemType: "orders.refund", At: at, OperationID: fmt.Sprintf("rev-%s-%d", tenant, at.UnixNano())}
	}
	// acme's two bracket globex's three, on one day 40 days back (discarded
	// ones are kept 30 days under the shipped policy), stored and discarded
	// at once so that one retention run removes them all.
	ids := testfactory.DeadLetters(t, b.Pool, letter("acme", day.Add(time.Minute)), letter("acme", day.Add(23*time.Hour)),
		letter("globex", day.Add(12*time.Hour)), letter("globex", day.Add(12*time.Hour+time.Second)),
		letter("globex", day.Add(12*time.Hour+2*time.Second)))
	testfactory.SetStatus(t, b.Pool, dlq.StatusDiscarded, ids...)

	keeper := b.Keeper()
	wait.Until(t, "retention removed both tenants' dead letters", time.Minute, func() bool {
		_, err := keeper.Pass(ctx)
		require.NoError(t, err)
		var left int
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters`).Scan(&left))
		return left == 0
	})

	auditor, _ := b.SignIn(t, "acme:auditor")
	resp := b.Do(t, auditor, http.MethodGet, "/audit/export.jsonl", nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	var lines []revExportLine
	sc := bufio.NewScanner(strings.NewReader(resp.Body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l revExportLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l))
		if l.Seq != 0 {
			lines = append(lines, l)
		}
	}
	require.NoError(t, sc.Err())

	// acme's own row of the run, as acme's auditor reads it.
	mine := -1
	for i, l := range lines {
		if !l.LeftOut && l.Action == dlq.ActionPurgeTenant {
			mine = i
		}
	}
	require.GreaterOrEqual(t, mine, 0, "acme's auditor finds acme's purge row")
	own := lines[mine]
	require.Equal(t, 3, own.HashVersion, "acme's row is of hash version 3")
	require.Equal(t, own.Hash, revHash(own), "the documented encoding re-hashes acme's own row")
	var after struct {
		By []struct {
			N      int64  `json:"n"`
			Status string `json:"status"`
		} `json:"by"`
		From, To, Pass, Partition string
		Rows                      int64
	}
	require.NoError(t, json.Unmarshal(own.After, &after))
	var acmeBy []string
	for _, l := range after.By {
		acmeBy = append(acmeBy, fmt.Sprintf(`{"n":%d,"status":%q,"tenant":"acme"}`, l.N, l.Status))
	}
	var ownBy []string
	for _, l := range after.By {
		ownBy = append(ownBy, fmt.Sprintf(`{"n":%d,"status":%q}`, l.N, l.Status))
	}
	require.JSONEq(t, string(own.After), string(revPurgeAfter(ownBy, after.To, after.From, after.Pass, after.Rows, after.Partition)))
	require.Equal(t, string(own.After), string(revPurgeAfter(ownBy, after.To, after.From, after.Pass, after.Rows, after.Partition)),
		"the canonical form is rebuilt exactly")
	rfc := func(s string) string {
		ts, err := time.Parse(time.RFC3339Nano, s)
		require.NoError(t, err)
		return ts.UTC().Format(time.RFC3339)
	}

	// Guesses: a few tenant names, every status, up to 50 dead letters,
	// against each stub that follows acme's row.
	var learned []string
	statuses := []string{"quarantined", "replay_failed", "discarded", "resolved", "replayed"}
	for _, stub := range lines[mine+1:] {
		if !stub.LeftOut {
			continue
		}
		require.Equal(t, 3, stub.HashVersion, "seq %d: a stub of hash version 3", stub.Seq)
		require.NotEmpty(t, stub.ContentDigest, "seq %d: a stub carries its content digest", stub.Seq)
		require.Empty(t, stub.Nonce, "seq %d: a stub shows no nonce", stub.Seq)
		for _, tenant := range []string{"beta", "globex", "initech", "umbrella"} {
			for _, st := range statuses {
				for n := int64(1); n <= 50; n++ {
					by := append(append([]string{}, acmeBy...), fmt.Sprintf(`{"n":%d,"status":%q,"tenant":%q}`, n, st, tenant))
					rows := after.Rows + n
					f := false
					guess := revExportLine{
						Seq: stub.Seq, At: own.At, ActorIssuer: own.ActorIssuer, ActorSubject: own.ActorSubject, ActorEmail: own.ActorEmail,
						ActorEmailOK: &f, Action: dlq.ActionPurge, ObjectType: own.ObjectType, ObjectID: own.ObjectID,
						Reason:  fmt.Sprintf("%d dead letters past their retention, dead-lettered %s to %s", rows, rfc(after.From), rfc(after.To)),
						Outcome: own.Outcome, After: revPurgeAfter(by, after.To, after.From, after.Pass, rows, after.Partition),
						RemoteAddr: own.RemoteAddr, UserAgent: own.UserAgent, PrevHash: stub.PrevHash,
					}
					if revHash(guess) == stub.Hash {
						learned = append(learned, fmt.Sprintf("seq %d: %d %s dead letters of %s", stub.Seq, n, st, tenant))
					}
				}
			}
		}
	}
	assert.Empty(t, learned, "acme's auditor learns another tenant's name and counts from a stub of acme's own export")
}

// TestRevTenantDeadLetterTrailShowsRowsOutsideAnyTenant: an on-call of
// acme selects, for a replay, the id the next dead letter will get (ids
// are a sequence: anyone sees theirs grow). There is none yet, so the
// draft refuses it and writes a denied row outside any tenant, object
// dead_letter:<id>: such an entry is for auditors of every tenant only
// (docs/access.md). The id then goes to a dead letter of globex, and its
// page's audit trail (audit.Trail's object half reads object_type and
// object_id in every tenant, and none) shows globex's viewer, who may read
// no audit log at all, acme's person, their address and what they tried:
// a row of no tenant on a tenant's page, and one anyone of any tenant can
// plant on another tenant's next dead letters.
func TestRevTenantDeadLetterTrailShowsRowsOutsideAnyTenant(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	acme, acmeUser := b.SignIn(t, "acme:oncall")
	var last int64
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT nextval(pg_get_serial_sequence('dead_letters', 'id'))`).Scan(&last))
	next := last + 1
	resp := b.Do(t, acme, http.MethodPost, "/replay", url.Values{"id": {strconv.FormatInt(next, 10)}, "reason": {"rev-tenant was here"}}, nil)
	require.Less(t, resp.Status, 500, resp.Body)
	// Whatever its object (dead_letter on lead; the refused selection,
	// dead_letters, since), the refusal names the id outside any tenant.
	require.Equal(t, 1, b.AuditCount(t, "tenant = '' AND action = 'replay.draft' AND outcome = 'denied' AND object_id = $1 AND actor_subject = $2",
		strconv.FormatInt(next, 10), acmeUser.Subject), "the refusal is a row outside any tenant")

	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "globex", ItemType: "search.index_update", MsgID: "rev-tenant-next"})
	require.Equal(t, next, id, "globex's dead letter got the id acme's person named")
	globex, _ := b.SignIn(t, "globex:viewer")
	page := b.Do(t, globex, http.MethodGet, "/deadletters/"+strconv.FormatInt(id, 10), nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	trail := page.Doc(t).Find(`[data-testid="dl-audit"]`).Text()
	assert.NotContains(t, trail, acmeUser.Email, "globex's viewer reads acme's person in the trail of globex's dead letter")
	assert.NotContains(t, trail, "selected dead letters refused", "globex's viewer reads a row outside any tenant")
}

// TestRevTenantCrossSiteSelectionDenialsAreLimited: an on-call of acme
// drafts a replay and sends a colleague's browser, from another site, to
// the draft's confirm page (GET /replay/batches/<batch>) as often as it
// likes. The colleague may read acme, so the route's locator lets it
// through; the replay service refuses someone else's selection and audits
// the denial itself (replay.selection), outside the web layer's
// appendDenied: every visit writes a row under the colleague, without the
// limit on denials another site started (a burst of 10, then one a
// minute) and without the reason saying another site started it
// (docs/access.md, "The route table"), so a site can fill the log with
// rows that read as the colleague peeking at other people's drafts.
func TestRevTenantCrossSiteSelectionDenialsAreLimited(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, author := b.SignIn(t, "acme:oncall")
	dl := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "rev-tenant-draft"})
	batch, _ := testfactory.Draft(t, b.Replays, author.Actor, dl)
	victim, me := b.SignIn(t, "acme:oncall")
	cross := map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Referer": "https://evil.example/"}
	before := b.AuditCount(t, "actor_subject = $1", me.Subject)
	for range 25 {
		// 404 as for a missing selection (or 403, refused before anything
		// is read, were the route marked as one that writes).
		assert.Contains(t, []int{http.StatusNotFound, http.StatusForbidden}, b.Do(t, victim, http.MethodGet, "/replay/batches/"+batch, nil, cross).Status)
	}
	written := b.AuditCount(t, "actor_subject = $1", me.Subject) - before
	assert.LessOrEqual(t, written, 10, "denials another site started are limited per person")
	unmarked := b.AuditCount(t, "actor_subject = $1 AND outcome = 'denied' AND reason NOT LIKE '%started by another site%'", me.Subject)
	assert.Zero(t, unmarked, "a denial another site started says so")
}
