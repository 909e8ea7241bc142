package web

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestKeptConfirmations: a typed confirmation comes back only for a
// request whose intent is what it was when the form was sent; where it
// changed the field is emptied and says why.
func TestKeptConfirmations(t *testing.T) {
	t.Parallel()
	draft := func(id int64, intent byte, msgIDs ...string) replay.SelectionRequest {
		r := replay.SelectionRequest{Request: replay.Request{ID: id, Tenant: "acme", Class: "manual", IntentHash: []byte{intent}},
			Confirmation: "REPLAY " + msgIDs[0]}
		for _, m := range msgIDs {
			r.Items = append(r.Items, replay.Item{MsgID: m})
		}
		return r
	}
	sel := func(rs ...replay.SelectionRequest) replay.Selection { return replay.Selection{Requests: rs} }
	typed := map[int64]string{1: "REPLAY a", 2: "REPLAY b"}
	sent := sel(draft(1, 1, "a"), draft(2, 2, "b"))

	t.Run("Unchanged", func(t *testing.T) {
		errs := map[string]string{}
		assert.Equal(t, typed, keptConfirmations(typed, &sent, sel(draft(1, 1, "a"), draft(2, 2, "b")), errs))
		assert.Empty(t, errs)
	})
	t.Run("StoredIntentChanged", func(t *testing.T) {
		errs := map[string]string{}
		got := keptConfirmations(typed, &sent, sel(draft(1, 9, "a"), draft(2, 2, "b")), errs)
		assert.Equal(t, map[int64]string{2: "REPLAY b"}, got)
		assert.Contains(t, errs["confirm-1"], "changed after you typed it")
	})
	t.Run("ItemLeftOut", func(t *testing.T) {
		errs := map[string]string{}
		now := draft(1, 1, "a")
		now.Items[0].SkipReason = "changed since the selection was made"
		got := keptConfirmations(typed, &sent, sel(now, draft(2, 2, "b")), errs)
		assert.NotContains(t, got, int64(1))
		assert.Contains(t, errs["confirm-1"], "changed after you typed it")
	})
	t.Run("OwnMessageKept", func(t *testing.T) {
		errs := map[string]string{"confirm-1": `type "REPLAY a" to confirm`}
		keptConfirmations(typed, &sent, sel(draft(1, 9, "a")), errs)
		assert.Equal(t, `type "REPLAY a" to confirm`, errs["confirm-1"])
	})
	t.Run("NoFormSent", func(t *testing.T) {
		errs := map[string]string{}
		assert.Empty(t, keptConfirmations(typed, nil, sent, errs))
		assert.Empty(t, errs)
	})
}
