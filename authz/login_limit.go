package authz

import (
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// A sign-in's callback asks the identity provider to exchange its code
// (with the console's client secret), and anyone can call it: a sign-in's
// state lives in a cookie the browser sends back, which a client that is
// no browser can send again, or write. Each such call is a request to the
// provider in the console's name, and a provider that limits its clients
// would then refuse the console's session refreshes too, signing everyone
// out. exchangeLimits bounds them per client address (an IPv6 address by
// its /64, which one host commonly holds whole): ExchangeBurst at once
// (people retrying, an office behind one address), then one every
// exchangeEvery; each exchange within exchangeTimeout. There is no limit
// on all addresses together: it would let anyone with many addresses
// refuse everyone's sign-ins, which the provider's own endpoint, public
// as it is, never protected against anyway.
const (
	exchangeEvery   = 500 * time.Millisecond
	exchangeBurst   = 50
	exchangeTimeout = 15 * time.Second
	// exchangeAddresses bounds the addresses remembered; past it, those
	// whose allowance is whole again are forgotten (nothing of theirs is
	// lost), and a new address is let through uncounted until room is
	// made.
	exchangeAddresses = 10000
)

// exchangeLimits decides whether a callback may ask the provider to
// exchange its code now (Allow).
type exchangeLimits struct {
	mu    sync.Mutex
	burst int
	addrs map[string]*rate.Limiter
}

// newExchangeLimits returns the limits, burst at once per address (0:
// exchangeBurst).
func newExchangeLimits(burst int) *exchangeLimits {
	if burst <= 0 {
		burst = exchangeBurst
	}
	return &exchangeLimits{burst: burst, addrs: map[string]*rate.Limiter{}}
}

// exchangeKey is what the limits count addr by: an IPv6 address by its
// /64, an IPv4 one (mapped into IPv6 or not) as it is.
func exchangeKey(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	if ip = ip.Unmap(); !ip.Is6() {
		return ip.String()
	}
	p, err := ip.Prefix(64)
	if err != nil {
		return addr
	}
	return p.String()
}

// Allow reports whether a callback from addr may exchange its code at now,
// taking its allowance if so.
func (l *exchangeLimits) Allow(addr string, now time.Time) bool {
	key := exchangeKey(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.addrs[key]
	if a == nil {
		if len(l.addrs) >= exchangeAddresses {
			for k, v := range l.addrs {
				if v.TokensAt(now) >= float64(l.burst) {
					delete(l.addrs, k)
				}
			}
		}
		if len(l.addrs) >= exchangeAddresses {
			return true
		}
		a = rate.NewLimiter(rate.Every(exchangeEvery), l.burst)
		l.addrs[key] = a
	}
	return a.AllowN(now, 1)
}
