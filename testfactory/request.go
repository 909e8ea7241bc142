package testfactory

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// Draft freezes ids into requester's draft requests, as if they could
// request every class in every tenant, and returns the batch and its
// requests.
func Draft(t testing.TB, svc *replay.Service, requester quarantine.Actor, ids ...int64) (string, []replay.Request) {
	t.Helper()
	ctx := context.Background()
	batch, err := svc.CreateDrafts(ctx, requester, ids, nil, true,
		func(string, replaypolicy.Class) bool { return true }, quarantine.RequestMeta{})
	require.NoError(t, err)
	drafts, err := svc.Batch(ctx, batch)
	require.NoError(t, err)
	return batch, drafts
}

// Request drafts ids and submits them as requester with in (a reason and
// the typed confirmations its class needs are filled in when in has none),
// and returns the one request it made.
func Request(t testing.TB, svc *replay.Service, requester quarantine.Actor, ids []int64, in replay.SubmitInput) replay.Request {
	t.Helper()
	ctx := context.Background()
	batch, drafts := Draft(t, svc, requester, ids...)
	if in.Reason == "" {
		in.Reason = "consumer fixed in release 1.2.3"
	}
	if in.Confirmations == nil {
		in.Confirmations = map[int64]string{}
		for _, d := range drafts {
			phrase, err := svc.ConfirmationFor(ctx, d.ID)
			require.NoError(t, err)
			in.Confirmations[d.ID] = phrase
		}
	}
	reqs, err := svc.Submit(ctx, batch, requester, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.Len(t, reqs, 1)
	return reqs[0]
}
