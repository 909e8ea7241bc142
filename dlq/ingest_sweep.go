package dlq

import (
	"context"
	"sync"
)

// sweepResult is what one sweep of a stream did.
type sweepResult struct {
	From, To                       uint64 // the sequences checked, From through To; none when To < From
	Missing                        uint64 // those found without a row
	Stored, AlreadyStored, Deleted uint64
	Busy                           bool // another replica was sweeping the stream
}

// sweepState is what the sweep keeps between sweeps.
type sweepState struct {
	mu     sync.Mutex
	during func()
}

func (in *Ingester) sweepLoop(ctx context.Context) {}

func (in *Ingester) sweep(ctx context.Context, stream string) (sweepResult, error) {
	return sweepResult{}, nil
}
