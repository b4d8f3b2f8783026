package server

import (
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// AuthLimits bound failed authentications and sign-ins. A client address
// (an IPv6 client by its /64) has a budget of Failures failed
// authentications, refilled by one every FailureEvery; once it is spent,
// the address's requests that need authentication are refused with 429
// and Retry-After until one is refilled, whatever credential they carry, so
// a guessing client cannot go on. A principal has a budget of SignIns
// sign-ins, refilled by one every SignInEvery.
type AuthLimits struct {
	Failures     int
	FailureEvery time.Duration
	SignIns      int
	SignInEvery  time.Duration
	// MaxClients bounds the addresses tracked; beyond it, addresses whose
	// budget is full are forgotten first, then the oldest.
	MaxClients int
}

// DefaultAuthLimits are the limits of a Config without its own: 20
// failures, one more every 6 s (10 a minute); 20 sign-ins per principal,
// one more every 3 s; 100 000 addresses.
var DefaultAuthLimits = AuthLimits{Failures: 20, FailureEvery: 6 * time.Second, SignIns: 20, SignInEvery: 3 * time.Second, MaxClients: 100_000}

// authLimiter keeps the budgets. Safe for concurrent use.
type authLimiter struct {
	cfg       AuthLimits
	mu        sync.Mutex
	byClient  map[netip.Prefix]*rate.Limiter
	byName    map[string]*rate.Limiter
	lastTouch map[netip.Prefix]time.Time
}

func newAuthLimiter(cfg AuthLimits) *authLimiter {
	d := DefaultAuthLimits
	if cfg.Failures <= 0 {
		cfg.Failures = d.Failures
	}
	if cfg.FailureEvery <= 0 {
		cfg.FailureEvery = d.FailureEvery
	}
	if cfg.SignIns <= 0 {
		cfg.SignIns = d.SignIns
	}
	if cfg.SignInEvery <= 0 {
		cfg.SignInEvery = d.SignInEvery
	}
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = d.MaxClients
	}
	return &authLimiter{cfg: cfg, byClient: map[netip.Prefix]*rate.Limiter{}, byName: map[string]*rate.Limiter{}, lastTouch: map[netip.Prefix]time.Time{}}
}

// clientKey is the unit of a client's budget: the address, or an IPv6
// address's /64 (one host usually holds a whole /64).
func clientKey(a netip.Addr) netip.Prefix {
	if !a.IsValid() {
		return netip.Prefix{}
	}
	if a.Is4() {
		return netip.PrefixFrom(a, 32)
	}
	p, _ := a.Prefix(64)
	return p
}

// blocked reports whether a has spent its budget at now, and how long
// until it has one failure to spend again.
func (l *authLimiter) blocked(a netip.Addr, now time.Time) (time.Duration, bool) {
	k := clientKey(a)
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.byClient[k]
	if !ok {
		return 0, false
	}
	tokens := lim.TokensAt(now)
	if tokens >= 1 {
		return 0, false
	}
	return time.Duration((1 - tokens) * float64(l.cfg.FailureEvery)), true
}

// fail spends one failure of a's budget at now and reports whether that
// spent the last one (the moment to log and audit it, once per block).
func (l *authLimiter) fail(a netip.Addr, now time.Time) bool {
	k := clientKey(a)
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.byClient[k]
	if !ok {
		if len(l.byClient) >= l.cfg.MaxClients {
			l.forgetLocked(now)
		}
		lim = rate.NewLimiter(rate.Every(l.cfg.FailureEvery), l.cfg.Failures)
		l.byClient[k] = lim
	}
	l.lastTouch[k] = now
	before := lim.TokensAt(now)
	lim.AllowN(now, 1)
	return before >= 1 && lim.TokensAt(now) < 1
}

// forgetLocked makes room: addresses whose budget is full again go, and if
// none does, the least recently failed tenth.
func (l *authLimiter) forgetLocked(now time.Time) {
	for k, lim := range l.byClient {
		if lim.TokensAt(now) >= float64(l.cfg.Failures) {
			delete(l.byClient, k)
			delete(l.lastTouch, k)
		}
	}
	if len(l.byClient) < l.cfg.MaxClients {
		return
	}
	keys := slices.SortedFunc(maps.Keys(l.lastTouch), func(a, b netip.Prefix) int { return l.lastTouch[a].Compare(l.lastTouch[b]) })
	for _, k := range keys[:max(1, len(keys)/10)] {
		delete(l.byClient, k)
		delete(l.lastTouch, k)
	}
}

// signIn spends one sign-in of the principal of key pkey at now; if none
// is left, it returns false and how long until one is.
func (l *authLimiter) signIn(pkey string, now time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.byName[pkey]
	if !ok {
		if len(l.byName) >= l.cfg.MaxClients {
			for k, v := range l.byName {
				if v.TokensAt(now) >= float64(l.cfg.SignIns) {
					delete(l.byName, k)
				}
			}
		}
		lim = rate.NewLimiter(rate.Every(l.cfg.SignInEvery), l.cfg.SignIns)
		l.byName[pkey] = lim
	}
	if lim.AllowN(now, 1) {
		return 0, true
	}
	return time.Duration((1 - lim.TokensAt(now)) * float64(l.cfg.SignInEvery)), false
}
