package dlq

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func TestProbeCommonGroup(t *testing.T) {
	l := newLetters(t)
	ctx := context.Background()
	_, _ = rareAmongMany(t, l)
	var fp string
	require.NoError(t, l.db.Pool.QueryRow(ctx, `SELECT fingerprint FROM dead_letters WHERE item_type <> 'payments.capture' LIMIT 1`).Scan(&fp))
	f := ListFilter{Tenants: []string{"acme"}, Fingerprint: fp}
	plan, err := l.store.ExplainList(ctx, f)
	require.NoError(t, err)
	show := func(name, plan string) {
		var rows []string
		for _, m := range regexp.MustCompile(`(?m)^.*(Sort|Merge Append|Append|Index Only Scan Backward|Index Scan Backward).*actual time=\S+ rows=(\d+).*$`).FindAllStringSubmatch(plan, -1) {
			rows = append(rows, strings.TrimSpace(m[0])[:min(150, len(strings.TrimSpace(m[0])))])
		}
		fmt.Printf("PROBE %s\n%s\n", name, strings.Join(rows, "\n"))
	}
	show("custom", plan)
	conn, err := l.db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`)
	require.NoError(t, err)
	p, err := l.store.plan(ctx, &f)
	require.NoError(t, err)
	sql, args, err := p.args.RewriteQuery(ctx, conn.Conn(), p.keysSQL(false), nil)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `PREPARE g AS `+sql)
	require.NoError(t, err)
	rows, err := conn.Query(ctx, fmt.Sprintf(`EXPLAIN (ANALYZE) EXECUTE g(ARRAY['acme'], %s)`, quote(args[1].(string))), pgx.QueryExecModeSimpleProtocol)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	show("generic", strings.Join(lines, "\n"))
}
