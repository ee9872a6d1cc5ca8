package handlers

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestSafeNextOnlySameOriginPaths: a post-login redirect goes only to a
// path on this origin; every way of naming another origin (or smuggling a
// control character a browser would drop) lands on "/".
func TestSafeNextOnlySameOriginPaths(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// Kept: plain same-origin paths, with queries and fragments.
		{"/", "/"},
		{"/providers", "/providers"},
		{"/call-logs?caller=app&range=1h", "/call-logs?caller=app&range=1h"},
		{"/versions/3#diff", "/versions/3#diff"},
		{"/call-logs?q=a%2Fb", "/call-logs?q=a%2Fb"},
		{"/providers/é", "/providers/é"},
		// Another origin, spelled every way browsers accept.
		{"", "/"},
		{"//evil.example/x", "/"},
		{"///evil.example", "/"},
		{"/\\evil.example/x", "/"},
		{"\\\\evil.example", "/"},
		{"/\t/evil.example/x", "/"},
		{"/\n/evil.example", "/"},
		{"/\r/evil.example", "/"},
		{"/\r\n/evil.example", "/"},
		{"/\x00/evil.example", "/"},
		{"/x\x00", "/"},
		{"/x\x7f", "/"},
		{"/x\u0085y", "/"},
		{"/foo\\bar", "/"},
		{"/%2F/evil.example", "/"},
		{"https://evil.example", "/"},
		{"https:evil.example", "/"},
		{"https:x", "/"},
		{"javascript:alert(1)", "/"},
		{"JavaScript:alert(1)", "/"},
		{"data:text/html,hi", "/"},
		{"evil.example", "/"},
		{" /providers", "/"},
		{"\t/providers", "/"},
		{"/\xff", "/"},
		{"/" + strings.Repeat("a", 3000), "/"},
	} {
		if got := safeNext(tc.in); got != tc.want {
			t.Errorf("safeNext(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSignInClientIP(t *testing.T) {
	trusted, err := ParseTrustedProxies("10.0.0.0/8, 192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	s := &SignIn{TrustedProxies: trusted}
	for _, tc := range []struct {
		name, remote, xff, want string
		s                       *SignIn
	}{
		{"direct peer", "203.0.113.5:4242", "", "203.0.113.5", s},
		{"untrusted peer's header is ignored", "203.0.113.5:4242", "1.2.3.4", "203.0.113.5", s},
		{"trusted proxy: right-most untrusted hop", "10.1.2.3:80", "1.2.3.4, 198.51.100.7, 10.9.9.9", "198.51.100.7", s},
		{"trusted single address", "192.0.2.1:80", "198.51.100.8", "198.51.100.8", s},
		{"trusted proxy without header", "10.1.2.3:80", "", "10.1.2.3", s},
		{"malformed hop stops the walk", "10.1.2.3:80", "1.2.3.4, junk", "10.1.2.3", s},
		{"no trust configured", "10.1.2.3:80", "1.2.3.4", "10.1.2.3", nil},
		{"IPv6 counted by /64", "[2001:db8:1:2:3:4:5:6]:443", "", "2001:db8:1:2::/64", s},
		{"IPv4-mapped IPv6", "[::ffff:203.0.113.9]:443", "", "203.0.113.9", s},
	} {
		r := httptest.NewRequest("POST", "/login", nil)
		r.RemoteAddr = tc.remote
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		if got := tc.s.ClientIP(r); got != tc.want {
			t.Errorf("%s: ClientIP = %q, want %q", tc.name, got, tc.want)
		}
	}
	if _, err := ParseTrustedProxies("10.0.0.0/8,not-an-ip"); err == nil {
		t.Error("a malformed trusted proxy was accepted")
	}
}
