package dlq

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
)

// TestVersionOf: the version alone, as Get reads it and as a close moves
// it on; an id of no dead letter is not_found.
func TestVersionOf(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	ids := l.insert(t, letter{msgID: "v-a"})

	t.Run("Success", func(t *testing.T) {
		v, err := l.store.VersionOf(ctx, ids[0])
		require.NoError(t, err)
		assert.Equal(t, int32(1), v)
		in := CloseInput{IDs: ids, Version: v, To: StatusDiscarded, Reason: "noise", Tenants: []string{"acme"}}
		_, err = l.store.Close(ctx, in, quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall"}, quarantine.RequestMeta{})
		require.NoError(t, err)
		d, err := l.store.Get(ctx, ids[0])
		require.NoError(t, err)
		v, err = l.store.VersionOf(ctx, ids[0])
		require.NoError(t, err)
		assert.Equal(t, d.Version, v)
		assert.Equal(t, int32(2), v)
	})
	t.Run("NotFound", func(t *testing.T) {
		_, err := l.store.VersionOf(ctx, ids[0]+1000)
		assert.Equal(t, quarantine.ENOTFOUND, quarantine.ErrorCode(err), "%v", err)
	})
}
