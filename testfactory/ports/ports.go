// Package ports gives tests a loopback TCP port to listen on later: the
// tests that start a server only after the process under test was told
// its address (a dependency that comes up late, a cluster whose nodes
// must know each other's ports first). It imports nothing of the project,
// so every test package may use it, the ones inside dlq too.
//
// A port the kernel hands out for bind(0) comes from its ephemeral range
// (ip_local_port_range, 32768-60999 by default), the range every outgoing
// connection's local port comes from too: on a busy machine one of them
// can take a port between the moment a test learned it and the moment it
// listens ("bind: address already in use", CI51's
// TestProbesWhileWaitingAtStart). Free picks below that range instead,
// where only an explicit bind takes a port.
package ports

import (
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
)

// The range Free picks from: below Linux's default ephemeral range.
const (
	lowest  = 20000
	highest = 32767
)

var (
	mu        sync.Mutex
	handedOut = map[int]bool{} // the ports Free gave in this process
)

// Free returns a loopback TCP port that nobody listened on a moment ago
// and that Free gave no one else in this test binary.
func Free(t testing.TB) int {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	for range 1000 {
		port := lowest + rand.IntN(highest-lowest+1)
		if handedOut[port] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // in use
		}
		if err := l.Close(); err != nil {
			t.Fatalf("close the listener of port %d: %v", port, err)
		}
		handedOut[port] = true
		return port
	}
	t.Fatalf("no free port in %d-%d after 1,000 tries", lowest, highest)
	return 0
}
