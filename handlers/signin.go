package handlers

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"switchyard/store/redis/loginguard"
)

// SignInOptions configure sign-in throttling (gateway.Options.SignIn).
type SignInOptions struct {
	// Settings are the throttle's thresholds (zero fields: defaults).
	Settings loginguard.Settings
	// TrustedProxies are the reverse proxies whose X-Forwarded-For is
	// believed. Without them the client address is the TCP peer: headers
	// are set by the client and would let it pick its own address.
	TrustedProxies []netip.Prefix
	// SSORecheck is how often single-sign-on sessions are refreshed at the
	// identity provider (SWITCHYARD_SSO_RECHECK_INTERVAL); zero never.
	SSORecheck time.Duration
}

// LoginGuard counts failed sign-ins and keeps the lockouts the console shows
// and clears; the assembly hands it *loginguard.Guard over Redis.
type LoginGuard interface {
	Check(ctx context.Context, user, ip string) loginguard.Verdict
	Fail(ctx context.Context, user, ip string) loginguard.Verdict
	Succeed(ctx context.Context, user string)
	Clear(ctx context.Context, kind loginguard.Kind, name string) error
	Locks(ctx context.Context) ([]loginguard.Lock, error)
	Settings() loginguard.Settings
}

// SignIn throttles failed console logins and admin API tokens. A nil
// *SignIn throttles nothing (console-only tests).
type SignIn struct {
	Guard          LoginGuard
	TrustedProxies []netip.Prefix
}

// NewSignIn returns the throttle of an instance.
func NewSignIn(g LoginGuard, trusted []netip.Prefix) *SignIn {
	return &SignIn{Guard: g, TrustedProxies: trusted}
}

// Check says whether an attempt by user (empty for a token) from ip may be
// checked at all.
func (s *SignIn) Check(ctx context.Context, user, ip string) loginguard.Verdict {
	if s == nil || s.Guard == nil {
		return loginguard.Verdict{}
	}
	return s.Guard.Check(ctx, user, ip)
}

// Fail counts a failed attempt and returns the verdict for the next one.
func (s *SignIn) Fail(ctx context.Context, user, ip string) loginguard.Verdict {
	if s == nil || s.Guard == nil {
		return loginguard.Verdict{}
	}
	return s.Guard.Fail(ctx, user, ip)
}

// Succeed clears a user's failures after a successful login.
func (s *SignIn) Succeed(ctx context.Context, user string) {
	if s != nil && s.Guard != nil {
		s.Guard.Succeed(ctx, user)
	}
}

// SetRetryAfter sets the Retry-After header of a throttled answer.
func SetRetryAfter(c echo.Context, v loginguard.Verdict) {
	c.Response().Header().Set("Retry-After", strconv.FormatInt(v.RetryAfterSeconds(), 10))
}

// ClientIP is the address sign-in failures are counted under: the TCP peer,
// or, when the peer is a trusted proxy, the right-most X-Forwarded-For entry
// that is not one. An IPv6 client is counted by its /64, which one machine
// usually owns whole.
func (s *SignIn) ClientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return loginguard.Normalize(host)
	}
	addr = addr.WithZone("").Unmap()
	if s != nil && s.trusted(addr) {
		hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				break // a malformed hop: keep the last address we could trust
			}
			addr = a.WithZone("").Unmap()
			if !s.trusted(addr) {
				break
			}
		}
	}
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p.String()
	}
	return addr.String()
}

func (s *SignIn) trusted(a netip.Addr) bool {
	for _, p := range s.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ParseTrustedProxies reads a comma-separated list of addresses and CIDR
// prefixes (SWITCHYARD_TRUSTED_PROXIES).
func ParseTrustedProxies(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !strings.Contains(f, "/") {
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, err
			}
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, err
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
