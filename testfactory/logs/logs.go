// Package logs collects what code under test logs, for tests that assert
// on log lines.
package logs

import (
	"strings"
	"sync"
)

// Buffer is an io.Writer that keeps everything written to it; safe for
// concurrent use (handlers log from many goroutines).
type Buffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
