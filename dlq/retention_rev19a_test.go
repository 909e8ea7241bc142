package dlq_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// rev19aSeq numbers the dead letters these tests build by hand.
var rev19aSeq atomic.Uint64

// rev19aLetter stores one dead letter as the ingester would store the DLQ
// message on subject with headers h, dead-lettered (and arrived) at, and
// returns its id and what ParseDLQ made of it.
func rev19aLetter(t *testing.T, r *retention, subject string, h map[string][]string, at time.Time) (int64, dlq.Record) {
	t.Helper()
	ctx := context.Background()
	st := dlq.NewStore(r.db.Pool)
	rec := dlq.ParseDLQ(dlq.DefaultSubjectPrefix, dlq.Received{Subject: subject, Header: h, Data: []byte(`{"n":1}`),
		Stream: "REV19A", Seq: rev19aSeq.Add(1), Time: at})
	_, err := st.Insert(ctx, []dlq.Record{rec})
	require.NoError(t, err)
	_, err = dlq.FoldCounters(ctx, r.db.Pool)
	require.NoError(t, err)
	d, err := st.BySource(ctx, rec.SourceStream, rec.SourceSeq, "")
	require.NoError(t, err)
	testfactory.Arrived(t, r.db.Pool, d.ID)
	return d.ID, rec
}

// TestRevRetention19TenantRuleMissesItemTypeWithEmptyToken: a tenant's
// [[retention.rule]] without item_type covers "every item type" of that
// tenant (item_type defaults to ">"). Tenant acme keeps everything for
// good (a legal hold: closed and unresolved "never"). A producer of acme
// dead-letters on dlq.acme (no item type token) with Dlq-Item-Type
// "billing..charge": ingest keeps that item type as sent (flagged
// invalid:item_type), in tenant acme. The rule's ">" does not match an item
// type with an empty token, so the dead letter falls to the section's 90
// days and the keeper removes acme's dead letter that acme's terms keep
// forever.
func TestRevRetention19TenantRuleMissesItemTypeWithEmptyToken(t *testing.T) {
	t.Parallel()
	r := setupRetentionWith(t, `
[[rule]]
item_type = "search.*"
class = "rebuildable"

[retention]
closed = "30d"
unresolved = "90d"

[[retention.rule]]
tenant = "acme"
closed = "never"
unresolved = "never"
`)
	at := r.daysAgo(100)
	odd, rec := rev19aLetter(t, r, "dlq.acme", map[string][]string{
		dlq.HeaderOriginalSubject: {"app.acme.billing.charge"}, dlq.HeaderItemType: {"billing..charge"},
		dlq.HeaderErrorClass: {"transient"}, dlq.HeaderError: {"boom"},
	}, at)
	require.Equal(t, "acme", rec.Tenant, "the subject's tenant")
	require.Equal(t, "billing..charge", rec.ItemType, "the item type as sent, flagged")
	plain := r.letters(t, 1, "acme", "billing.charge", at.Add(time.Minute), dlq.StatusQuarantined)

	r.pass(t)
	left := r.remaining(t, []int64{odd, plain[0]})
	assert.Contains(t, left, plain[0], "acme's dead letter of a well-formed item type is kept for good")
	assert.Contains(t, left, odd, "acme's dead letter whose item type has an empty token is acme's too: kept for good, not the section's 90 days")
}
