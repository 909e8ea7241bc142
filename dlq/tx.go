package dlq

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// txAttempts bounds how often InTx runs a transaction that lost a lock
// race: the first run and two more.
const txAttempts = 3

// InTx runs fn in a transaction on db, as pgx.BeginFunc does, and runs it
// again in a new transaction, at most txAttempts times in all, when
// PostgreSQL ended it as a deadlock victim (40P01) or a serialization
// failure (40001): the transaction rolled back whole, so running it again is
// safe. Statements take their locks in one order (dead letters by key, then
// the counters, then the audit chain) so this is a second line of defence,
// not the plan. fn must touch nothing outside the database and set the
// caller's variables afresh on each run.
func InTx(ctx context.Context, db beginner, fn func(pgx.Tx) error) error {
	var err error
	for range txAttempts {
		if err = pgx.BeginFunc(ctx, db, fn); !LostRace(err) || ctx.Err() != nil {
			return err
		}
	}
	return err
}
