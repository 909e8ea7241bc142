package authz

import (
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
// out. exchangeLimits bounds them: exchangeEvery one per client address
// (exchangeBurst at once: people retrying, an office behind one address),
// and exchangeAllEvery one in all (exchangeAllBurst at once: a morning's
// sign-ins), each exchange within exchangeTimeout.
const (
	exchangeEvery    = time.Second
	exchangeBurst    = 20
	exchangeAllEvery = 50 * time.Millisecond
	exchangeAllBurst = 100
	exchangeTimeout  = 15 * time.Second
	// exchangeAddresses bounds the addresses remembered; past it, those
	// whose allowance is whole again are forgotten (nothing of theirs is
	// lost), and a new address has only the limit on all.
	exchangeAddresses = 10000
)

// exchangeLimits decides whether a callback may ask the provider to
// exchange its code now (Allow).
type exchangeLimits struct {
	mu    sync.Mutex
	all   *rate.Limiter
	burst int // per address
	addrs map[string]*rate.Limiter
}

// newExchangeLimits returns the limits, burst at once per address (0:
// exchangeBurst).
func newExchangeLimits(burst int) *exchangeLimits {
	if burst <= 0 {
		burst = exchangeBurst
	}
	return &exchangeLimits{all: rate.NewLimiter(rate.Every(exchangeAllEvery), max(exchangeAllBurst, burst)), burst: burst,
		addrs: map[string]*rate.Limiter{}}
}

// Allow reports whether a callback from addr may exchange its code at now,
// taking its allowance if so.
func (l *exchangeLimits) Allow(addr string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.addrs[addr]
	if a == nil {
		if len(l.addrs) >= exchangeAddresses {
			for k, v := range l.addrs {
				if v.TokensAt(now) >= float64(l.burst) {
					delete(l.addrs, k)
				}
			}
		}
		if len(l.addrs) < exchangeAddresses {
			a = rate.NewLimiter(rate.Every(exchangeEvery), l.burst)
			l.addrs[addr] = a
		}
	}
	if a != nil && a.TokensAt(now) < 1 {
		return false
	}
	if !l.all.AllowN(now, 1) {
		return false
	}
	if a != nil {
		a.AllowN(now, 1)
	}
	return true
}
