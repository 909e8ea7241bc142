package dlq

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPreviewCutsLongValues: a producer may send an error and a stack
// trace of megabytes and ten thousand headers, and ingest keeps them whole.
// The detail page's read (Preview) gets only what the page shows: the
// first 64 KiB of the error and of the stack trace, cut by PostgreSQL at a
// character boundary, and the first 500 headers with names and values
// cut to 4 KiB, each with the whole size; the rest never leaves PostgreSQL.
func TestPreviewCutsLongValues(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	// 2-, 3- and 4-byte characters put the 65,536th byte inside one.
	errText := "x" + strings.Repeat("é", 600_000)
	stack := "xy" + strings.Repeat("€", 400_000)
	hs := []HeaderValue{{Name: "A-Long", Value: strings.Repeat("😀", 3000)}, {Name: "A-Binary", Value: strings.Repeat("AAAA", 2000), Encoding: "base64"}}
	for i := range 10_000 {
		hs = append(hs, HeaderValue{Name: fmt.Sprintf("H%05d", i), Value: "v"})
	}
	hostile := l.record(letter{err: errText, stack: stack})
	hostile.Headers = hs
	short := l.record(letter{err: "refund failed", stack: "main.go:1"})
	none := l.record(letter{})
	none.Headers = nil // stored as JSON null
	ids := make([]int64, 3)
	for i, r := range []Record{hostile, short, none} {
		_, err := l.store.Insert(ctx, []Record{r})
		require.NoError(t, err)
		require.NoError(t, l.db.Pool.QueryRow(ctx, `SELECT id FROM dead_letters WHERE source_stream = $1 AND source_seq = $2`,
			r.SourceStream, int64(r.SourceSeq)).Scan(&ids[i]))
	}

	d, err := l.store.Preview(ctx, ids[0], nil)
	require.NoError(t, err)
	for _, c := range []struct{ name, whole, got string }{{"error", errText, d.Error}, {"stack", stack, d.Stack}} {
		assert.True(t, utf8.ValidString(c.got), "%s: whole characters", c.name)
		assert.True(t, strings.HasPrefix(c.whole, c.got), "%s: a prefix of the whole", c.name)
		assert.LessOrEqual(t, len(c.got), 64<<10, "%s: at most 64 KiB", c.name)
		assert.Greater(t, len(c.got), 64<<10-utf8.UTFMax, "%s: as much as fits", c.name)
	}
	assert.Equal(t, int64(len(errText)), d.ErrorSize)
	assert.Equal(t, int64(len(stack)), d.StackSize)
	assert.Equal(t, len(hs), d.HeaderCount, "every header counted")
	shown, err := d.ShownHeaders()
	require.NoError(t, err)
	require.Len(t, shown, 500, "the first 500 headers")
	assert.Equal(t, "A-Long", shown[0].Name, "in the order stored")
	assert.Equal(t, strings.Repeat("😀", 1024), shown[0].Value, "a value cut to 4 KiB, whole characters")
	assert.Equal(t, len(hs[0].Value), shown[0].ValueSize)
	assert.Equal(t, "base64", shown[1].Encoding)
	assert.Equal(t, strings.Repeat("AAAA", 1024), shown[1].Value)
	assert.Equal(t, fmt.Sprintf("H%05d", 497), shown[499].Name)
	assert.Equal(t, 1, shown[499].ValueSize)

	t.Run("ShortWhole", func(t *testing.T) {
		d, err := l.store.Preview(ctx, ids[1], nil)
		require.NoError(t, err)
		assert.Equal(t, "refund failed", d.Error)
		assert.Equal(t, "main.go:1", d.Stack)
		assert.Equal(t, int64(len("refund failed")), d.ErrorSize)
		shown, err := d.ShownHeaders()
		require.NoError(t, err)
		assert.Equal(t, []ShownHeader{{HeaderValue: HeaderValue{Name: HeaderError, Value: "refund failed"}, ValueSize: len("refund failed")}}, shown)
		assert.Equal(t, 1, d.HeaderCount)
	})
	t.Run("NullHeaders", func(t *testing.T) {
		d, err := l.store.Preview(ctx, ids[2], nil)
		require.NoError(t, err)
		assert.Zero(t, d.HeaderCount)
		shown, err := d.ShownHeaders()
		require.NoError(t, err)
		assert.Empty(t, shown)
	})
}
