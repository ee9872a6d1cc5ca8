package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"switchyard/handlers"
	"switchyard/store"
	"switchyard/store/redis/loginguard"
	"switchyard/web/gateway/gatewaytest"
)

// Sign-in abuse (issue 13, part 5): throttled and locked-out logins, the
// admin's Clear lockout, throttled admin API tokens, a disabled user's
// token, post-login redirects and call-log filters that cannot be read.

const rightPassword = "right-password-123"

// browser is an anonymous visitor of the login form: its own cookie jar,
// redirects not followed, optional extra headers (X-Forwarded-For).
type browser struct {
	t    *testing.T
	base string
	http *http.Client
	hdr  http.Header
}

func newBrowser(t *testing.T, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, hdr: http.Header{}, http: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) do(req *http.Request) (*http.Response, *goquery.Document) {
	b.t.Helper()
	for k, v := range b.hdr {
		req.Header[k] = v
	}
	res, err := b.http.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(string(body)))
	if err != nil {
		b.t.Fatal(err)
	}
	return res, doc
}

func (b *browser) get(path string) (*http.Response, *goquery.Document) {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.base+path, nil)
	return b.do(req)
}

// login posts the login form as a browser would (CSRF cookie and field).
func (b *browser) login(username, password, next string) (*http.Response, *goquery.Document) {
	b.t.Helper()
	u, _ := url.Parse(b.base)
	csrf := ""
	for range 2 {
		for _, ck := range b.http.Jar.Cookies(u) {
			if ck.Name == "switchyard_csrf" {
				csrf = ck.Value
			}
		}
		if csrf != "" {
			break
		}
		b.get("/login")
	}
	v := url.Values{"username": {username}, "password": {password}, "_csrf": {csrf}}
	if next != "" {
		v.Set("next", next)
	}
	req, _ := http.NewRequest(http.MethodPost, b.base+"/login", strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

func createUser(t *testing.T, e *gatewaytest.Env, username string) int64 {
	t.Helper()
	id, err := e.Store.CreateUser(context.Background(), username, rightPassword, store.RoleViewer)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func retryAfter(t *testing.T, res *http.Response) int {
	t.Helper()
	n, err := strconv.Atoi(res.Header.Get("Retry-After"))
	if err != nil || n < 1 {
		t.Fatalf("Retry-After %q on a %d", res.Header.Get("Retry-After"), res.StatusCode)
	}
	return n
}

// failUntilLocked sends wrong passwords (waiting out each short back-off)
// until the answer says locked out; it returns how many were answered 401.
func failUntilLocked(t *testing.T, b *browser, username string) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	wrong := 0
	for i := 0; time.Now().Before(deadline); i++ {
		res, doc := b.login(username, fmt.Sprintf("wrong-password-%03d", i), "")
		switch res.StatusCode {
		case http.StatusUnauthorized:
			wrong++
		case http.StatusTooManyRequests:
			retryAfter(t, res)
			if strings.Contains(testID(doc, "login-throttle").Text(), "clear the lockout") {
				return wrong
			}
			time.Sleep(30 * time.Millisecond)
		default:
			t.Fatalf("wrong password %d: status %d", i, res.StatusCode)
		}
	}
	t.Fatalf("%s not locked out after 20 s (%d wrong passwords answered)", username, wrong)
	return 0
}

// fast are thresholds a test can reach in well under a second.
func fast(user, ip loginguard.Limits, trusted ...string) handlers.SignInOptions {
	o := handlers.SignInOptions{Settings: loginguard.Settings{User: user, IP: ip, BackoffBase: 20 * time.Millisecond, LockoutFor: 15 * time.Minute}}
	for _, p := range trusted {
		o.TrustedProxies = append(o.TrustedProxies, netip.MustParsePrefix(p))
	}
	return o
}

// TestLoginThrottleAndLockout: failed logins back off, then lock the
// username out (429 + Retry-After, with the right password too, on every
// instance); the lockout is logged without passwords, listed on Users &
// tokens, cleared by an admin (not a viewer); a successful login resets the
// username's count.
func TestLoginThrottleAndLockout(t *testing.T) {
	var logs syncBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	e := gatewaytest.New(t, gatewaytest.Options{Logger: logger}) // default thresholds
	admin := obsLogin(t, e, "boss", store.RoleAdmin)
	viewer := obsLogin(t, e, "watcher", store.RoleViewer)
	createUser(t, e, "victim")

	// What the tester did: 40 wrong passwords as fast as possible.
	b := newBrowser(t, e.URL)
	var answered401 []int
	refused := 0
	for i := range 40 {
		res, doc := b.login("victim", fmt.Sprintf("wrong-password-%02d", i), "")
		switch res.StatusCode {
		case http.StatusUnauthorized:
			answered401 = append(answered401, i)
		case http.StatusTooManyRequests:
			refused++
			retryAfter(t, res)
			if msg := testID(doc, "login-throttle").Text(); !strings.Contains(msg, "Too many failed sign-ins for this user; try again in ") {
				t.Fatalf("429 page says %q", msg)
			}
		default:
			t.Fatalf("attempt %d: status %d", i, res.StatusCode)
		}
	}
	// Defaults: 5 failures, then waits of 1 s, 2 s, 4 s, 8 s: the first five
	// are checked, and only a few more within the run.
	if len(answered401) < 5 || len(answered401) > 8 || answered401[4] != 4 || refused < 30 {
		t.Fatalf("40 wrong passwords: checked %v, refused %d; want the first 5 checked and the rest mostly refused", answered401, refused)
	}
	// ...and the right password is refused as well while the user waits.
	res, doc := b.login("victim", rightPassword, "")
	if res.StatusCode != http.StatusTooManyRequests || testID(doc, "login-throttle").Length() != 1 {
		t.Fatalf("right password during back-off: %d", res.StatusCode)
	}
	retryAfter(t, res)

	// Lockout, on a second instance with thresholds a test can reach (the
	// counts live in Redis, shared by both).
	e2 := e.Second(gatewaytest.Options{Logger: logger, SignIn: fast(loginguard.Limits{BackoffAfter: 3, LockoutAfter: 6}, loginguard.Limits{BackoffAfter: 1000, LockoutAfter: 1000})})
	createUser(t, e, "locked-user")
	b2 := newBrowser(t, e2.URL)
	if n := failUntilLocked(t, b2, "locked-user"); n != 6 {
		t.Fatalf("locked after %d checked wrong passwords, want 6", n)
	}
	res, doc = b2.login("locked-user", rightPassword, "")
	if res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("right password while locked out: %d", res.StatusCode)
	}
	if ra := retryAfter(t, res); ra < 890 || ra > 900 {
		t.Fatalf("Retry-After %d s, want about 15 min", ra)
	}
	msg := testID(doc, "login-throttle").Text()
	if !strings.Contains(msg, "Too many failed sign-ins for this user; try again in ") || !strings.Contains(msg, "An admin can clear the lockout") {
		t.Fatalf("lockout message %q", msg)
	}
	// The other instance refuses it too: the lockout is shared.
	if res, doc := newBrowser(t, e.URL).login("locked-user", rightPassword, ""); res.StatusCode != http.StatusTooManyRequests ||
		!strings.Contains(testID(doc, "login-throttle").Text(), "for this user") {
		t.Fatalf("first instance, locked user: %d", res.StatusCode)
	}
	// Logged once, with the username and no password.
	out := logs.String()
	if strings.Count(out, `"msg":"sign-in lockout"`) != 1 || !strings.Contains(out, `"subject":"locked-user"`) {
		t.Fatalf("lockout log lines:\n%s", out)
	}
	if strings.Contains(out, "wrong-password") || strings.Contains(out, rightPassword) {
		t.Fatal("a password reached the log")
	}

	// Users & tokens lists it; a viewer sees it but cannot clear it.
	_, doc, _ = viewer.get("/settings")
	if testID(doc, "lockout-user-locked-user").Length() != 1 || testID(doc, "lockout-clear-user-locked-user").Length() != 0 {
		t.Fatal("viewer: lockout row missing, or a clear button shown")
	}
	if res, _, _ := viewer.postForm("/settings/lockouts/clear", url.Values{"kind": {"user"}, "subject": {"locked-user"}}); res.StatusCode != http.StatusForbidden {
		t.Fatalf("viewer clears a lockout: %d", res.StatusCode)
	}
	_, doc, _ = admin.get("/settings")
	if testID(doc, "lockout-clear-user-locked-user").Length() != 1 {
		t.Fatal("admin sees no Clear lockout button")
	}
	if res, doc, _ := admin.asHTMX().postForm("/settings/lockouts/clear", url.Values{"kind": {"bogus"}, "subject": {"x"}}); res.StatusCode != http.StatusUnprocessableEntity ||
		testID(doc, "lockouts-error").Length() != 1 {
		t.Fatalf("clearing an unknown kind: %d", res.StatusCode)
	}
	res, doc, _ = admin.asHTMX().postForm("/settings/lockouts/clear", url.Values{"kind": {"user"}, "subject": {"locked-user"}})
	if res.StatusCode != http.StatusOK || testID(doc, "lockouts-notice").Length() != 1 || testID(doc, "lockout-user-locked-user").Length() != 0 {
		t.Fatalf("clear lockout: %d", res.StatusCode)
	}
	if res, _ := b2.login("locked-user", rightPassword, ""); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("right password after the clear: %d", res.StatusCode)
	}

	// A success resets the count: 2 + 2 failures around it stay below 3.
	b3 := newBrowser(t, e2.URL)
	for round := range 2 {
		for i := range 2 {
			if res, doc := b3.login("locked-user", "wrong-again", ""); res.StatusCode != http.StatusUnauthorized || testID(doc, "login-throttle").Length() != 0 {
				t.Fatalf("round %d failure %d: %d", round, i, res.StatusCode)
			}
		}
		if res, _ := newBrowser(t, e2.URL).login("locked-user", rightPassword, ""); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("round %d success: %d", round, res.StatusCode)
		}
	}
}

// TestLoginThrottlePerAddress: many usernames from one client address lock
// the address (not the usernames) out; another address is unaffected. The
// address is read from X-Forwarded-For only because the proxy is trusted.
func TestLoginThrottlePerAddress(t *testing.T) {
	e := gatewaytest.New(t, gatewaytest.Options{SignIn: fast(loginguard.Limits{BackoffAfter: 100, LockoutAfter: 100}, loginguard.Limits{BackoffAfter: 3, LockoutAfter: 5}, "127.0.0.1/32")})
	admin := obsLogin(t, e, "boss", store.RoleAdmin)
	createUser(t, e, "alice")

	sprayer := newBrowser(t, e.URL)
	sprayer.hdr.Set("X-Forwarded-For", "198.51.100.1")
	checked := 0
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; ; i++ {
		if time.Now().After(deadline) {
			t.Fatal("address not locked out after 20 s")
		}
		res, doc := sprayer.login(fmt.Sprintf("user-%d", i), "guess", "")
		if res.StatusCode == http.StatusUnauthorized {
			checked++
			continue
		}
		if res.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("spray %d: %d", i, res.StatusCode)
		}
		msg := testID(doc, "login-throttle").Text()
		if !strings.Contains(msg, "from your network address") {
			t.Fatalf("address throttle message %q", msg)
		}
		if strings.Contains(msg, "clear the lockout") {
			break
		}
		time.Sleep(30 * time.Millisecond)
	}
	if checked != 5 {
		t.Fatalf("address locked after %d checked guesses, want 5", checked)
	}
	if res, _ := sprayer.login("alice", rightPassword, ""); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("right password from the locked address: %d", res.StatusCode)
	}
	other := newBrowser(t, e.URL)
	other.hdr.Set("X-Forwarded-For", "198.51.100.2")
	if res, _ := other.login("alice", rightPassword, ""); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("another address: %d", res.StatusCode)
	}

	_, doc, _ := admin.get("/settings")
	if testID(doc, "lockout-ip-198.51.100.1").Length() != 1 {
		t.Fatal("locked address not listed")
	}
	res, _, _ := admin.postForm("/settings/lockouts/clear", url.Values{"kind": {"ip"}, "subject": {"198.51.100.1"}})
	if res.StatusCode != http.StatusOK { // the plain post redirects to /settings, followed
		t.Fatalf("clear address lockout: %d", res.StatusCode)
	}
	if res, _ := sprayer.login("alice", rightPassword, ""); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("right password after the address was cleared: %d", res.StatusCode)
	}
}

func apiCall(t *testing.T, e *gatewaytest.Env, method, path, token, body string) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, e.URL+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	return res, out
}

func apiErrorCode(body map[string]any) string {
	if e, ok := body["error"].(map[string]any); ok {
		s, _ := e["code"].(string)
		return s
	}
	return ""
}

// TestAdminTokenThrottle: bad bearer tokens count against the client
// address: past the threshold every request from it (a valid token's too)
// is answered 429 with Retry-After until an admin clears the address.
func TestAdminTokenThrottle(t *testing.T) {
	e := gatewaytest.New(t, gatewaytest.Options{SignIn: fast(loginguard.Limits{BackoffAfter: 100, LockoutAfter: 100}, loginguard.Limits{BackoffAfter: 3, LockoutAfter: 5})})
	admin := obsLogin(t, e, "boss", store.RoleAdmin) // signed in before the address is locked
	good, _, err := e.Store.CreateAdminToken(context.Background(), "ci", store.RoleAdmin, "boss")
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := apiCall(t, e, http.MethodGet, "/admin/api/tenants", good, ""); res.StatusCode != http.StatusOK {
		t.Fatalf("valid token: %d", res.StatusCode)
	}
	// No token at all is not a guess: 401, not counted.
	for range 10 {
		if res, _ := apiCall(t, e, http.MethodGet, "/admin/api/tenants", "", ""); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("no token: %d", res.StatusCode)
		}
	}
	wrong, deadline := 0, time.Now().Add(20*time.Second)
	var locked *http.Response
	for i := 0; locked == nil; i++ {
		if time.Now().After(deadline) {
			t.Fatal("address not locked out after 20 s of bad tokens")
		}
		res, body := apiCall(t, e, http.MethodGet, "/admin/api/tenants", fmt.Sprintf("sya-not-a-token-%03d", i), "")
		switch res.StatusCode {
		case http.StatusUnauthorized:
			wrong++
		case http.StatusTooManyRequests:
			if apiErrorCode(body) != "too_many_failures" {
				t.Fatalf("429 body %v", body)
			}
			if retryAfter(t, res) > 60 {
				locked = res
			} else {
				time.Sleep(30 * time.Millisecond)
			}
		default:
			t.Fatalf("bad token %d: %d", i, res.StatusCode)
		}
	}
	if wrong != 5 {
		t.Fatalf("locked after %d bad tokens, want 5", wrong)
	}
	res, body := apiCall(t, e, http.MethodGet, "/admin/api/tenants", good, "")
	if res.StatusCode != http.StatusTooManyRequests || apiErrorCode(body) != "too_many_failures" {
		t.Fatalf("valid token from the locked address: %d %v", res.StatusCode, body)
	}
	if ra := retryAfter(t, res); ra < 890 || ra > 900 {
		t.Fatalf("Retry-After %d, want about 15 min", ra)
	}
	_, doc, _ := admin.get("/settings")
	if testID(doc, "lockout-ip-127.0.0.1").Length() != 1 {
		t.Fatal("locked address not listed on Users & tokens")
	}
	admin.postForm("/settings/lockouts/clear", url.Values{"kind": {"ip"}, "subject": {"127.0.0.1"}})
	if res, _ := apiCall(t, e, http.MethodGet, "/admin/api/tenants", good, ""); res.StatusCode != http.StatusOK {
		t.Fatalf("valid token after the clear: %d", res.StatusCode)
	}
}

// TestDisabledUserTokenRefused: disabling a user ends their session and
// revokes the admin API token they created: GET and POST answer 401, and
// the token stays refused even if its revocation is undone by hand.
func TestDisabledUserTokenRefused(t *testing.T) {
	e := gatewaytest.New(t)
	ctx := context.Background()
	boss := obsLogin(t, e, "boss", store.RoleAdmin)
	ops := obsLogin(t, e, "ops", store.RoleAdmin)

	res, doc, _ := ops.postForm("/settings/tokens", url.Values{"token_name": {"ops-ci"}, "token_role": {"admin"}})
	token := strings.TrimSpace(testID(doc, "token-plaintext").Text())
	if res.StatusCode != http.StatusOK || token == "" {
		t.Fatalf("ops creates a token: %d", res.StatusCode)
	}
	if res, _ := apiCall(t, e, http.MethodGet, "/admin/api/tenants", token, ""); res.StatusCode != http.StatusOK {
		t.Fatalf("GET with ops's token: %d", res.StatusCode)
	}
	if res, _ := apiCall(t, e, http.MethodPost, "/admin/api/tenants", token, `{"name":"before"}`); res.StatusCode != http.StatusCreated {
		t.Fatalf("POST with ops's token: %d", res.StatusCode)
	}

	var opsID int64
	if err := e.Store.DB().QueryRowContext(ctx, `SELECT id FROM users WHERE username='ops'`).Scan(&opsID); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(e.URL)
	var session string
	for _, ck := range ops.HTTP.Jar.Cookies(u) {
		if ck.Name == "switchyard_session" {
			session = ck.Value
		}
	}
	res, doc, _ = boss.postForm("/settings/users/"+itoa(opsID)+"/disable", nil)
	if res.StatusCode != http.StatusOK || !strings.Contains(doc.Text(), "admin API token they created is revoked") {
		t.Fatalf("disable ops: %d", res.StatusCode)
	}

	// The session row is gone (not merely refused later)...
	var n int
	if err := e.Store.DB().QueryRowContext(ctx, `SELECT count(*) FROM sessions WHERE token=$1`, session).Scan(&n); err != nil || n != 0 || session == "" {
		t.Fatalf("ops's session still stored (%d, %v)", n, err)
	}
	if res, _, _ := ops.asHTMX().get("/"); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("ops's session after disable: %d", res.StatusCode)
	}
	// ...and the token is refused for reading and writing.
	if res, body := apiCall(t, e, http.MethodGet, "/admin/api/tenants", token, ""); res.StatusCode != http.StatusUnauthorized || apiErrorCode(body) != "unauthorized" {
		t.Fatalf("GET with a disabled user's token: %d %v", res.StatusCode, body)
	}
	if res, _ := apiCall(t, e, http.MethodPost, "/admin/api/tenants", token, `{"name":"after"}`); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("POST with a disabled user's token: %d", res.StatusCode)
	}
	// Defence in depth: authentication checks the owner is enabled.
	if _, err := e.Store.DB().ExecContext(ctx, `UPDATE admin_tokens SET revoked_at=NULL`); err != nil {
		t.Fatal(err)
	}
	if res, _ := apiCall(t, e, http.MethodGet, "/admin/api/tenants", token, ""); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("un-revoked token of a disabled user: %d", res.StatusCode)
	}
}

// TestLoginNextOnlySameOrigin: after login, next sends the browser only to
// a path on this origin; every payload naming another origin lands on "/".
func TestLoginNextOnlySameOrigin(t *testing.T) {
	e := gatewaytest.New(t)
	createUser(t, e, "nav")
	for _, tc := range []struct{ next, want string }{
		{"//x", "/"},
		{"/\\x", "/"},
		{"/\t/x", "/"},
		{"https:x", "/"},
		{"/\t/evil.example/x", "/"},
		{"//evil.example/x", "/"},
		{"/\\evil.example", "/"},
		{"/\r\n/evil.example", "/"},
		{"/\x00/evil.example", "/"},
		{"https://evil.example/", "/"},
		{"javascript:alert(1)", "/"},
		{"/call-logs?range=1h", "/call-logs?range=1h"},
	} {
		res, _ := newBrowser(t, e.URL).login("nav", rightPassword, tc.next)
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != tc.want {
			t.Errorf("next=%q: %d to %q, want 303 to %q", tc.next, res.StatusCode, res.Header.Get("Location"), tc.want)
		}
		// The login page does not carry it into its form either.
		_, doc := newBrowser(t, e.URL).get("/login?next=" + url.QueryEscape(tc.next))
		if got := doc.Find(`input[name="next"]`).AttrOr("value", "?"); got != tc.want {
			t.Errorf("login page next=%q: form carries %q, want %q", tc.next, got, tc.want)
		}
	}
}

// TestCallLogFiltersRejectBadInput: call-log filters PostgreSQL cannot read
// (NUL, invalid UTF-8, absurd lengths, times out of range, damaged cursors)
// answer 400 with a message, never 500; and no console page or admin API
// route answers 500 to such query input.
func TestCallLogFiltersRejectBadInput(t *testing.T) {
	e := gatewaytest.New(t)
	e.Simple()
	viewer := obsLogin(t, e, "watcher", store.RoleViewer)
	long := strings.Repeat("x", 5000)
	for _, q := range []string{
		"caller=%00",
		"caller=app%00",
		"provider=%FF%FE",
		"logic_model=" + long,
		"tier=fa%0Ast",
		"error_class=%00",
		"request_id=%00",
		"range=%00",
		"anchor=99999999999999",
		"anchor=-5",
		"anchor=abc",
		"range=7d&anchor=253402300800", // year 10000
		"range=custom&from=0000-01-01T00:00",
		"range=custom&to=99999-01-01T00:00",
		"range=custom&from=yesterday",
		"cursor=" + long,
		"cursor=%00",
		"cursor=bm90LWEtY3Vyc29y",             // "not-a-cursor"
		"cursor=OTIyMzM3MjAzNjg1NDc3NTgwNzp4", // "9223372036854775807:x": beyond year 9999
		"deployment=abc",
		"deployment=-3",
		"deployment=99999999999999999999",
		"key=sk-%00",
	} {
		for _, htmx := range []bool{false, true} {
			c := viewer
			if htmx {
				c = viewer.asHTMX()
			}
			res, doc, _ := c.get("/call-logs?" + q)
			if res.StatusCode != http.StatusBadRequest || strings.TrimSpace(testID(doc, "calllog-error").Text()) == "" {
				t.Errorf("%.80s (htmx %v): %d, error %q; want 400 with a message", q, htmx, res.StatusCode, testID(doc, "calllog-error").Text())
			}
		}
	}
	// Readable filters that make no sense keep their 422.
	if res, _, _ := viewer.get("/call-logs?status=bogus"); res.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("unknown status: %d", res.StatusCode)
	}
	if res, _, _ := viewer.get("/call-logs?caller=app&range=1h"); res.StatusCode != http.StatusOK {
		t.Errorf("a good filter: %d", res.StatusCode)
	}

	// Every other console page and admin API route that reads the query or
	// path: nothing answers 500.
	admin := obsLogin(t, e, "boss", store.RoleAdmin)
	for _, p := range []string{
		"/call-logs/%00", "/call-logs/%FF", "/call-logs/" + long, "/call-logs/x?at=9223372036854775807", "/call-logs/x?at=-1",
		"/dashboard?range=%00&group=%FF", "/dashboard?range=" + long + "&group=" + long, "/dashboard?range=100000d",
		"/versions/diff?from=%00&to=draft", "/versions/diff?from=99999999999999999999&to=1", "/versions/diff?from=draft&to=%FF",
		"/versions/%00", "/versions/99999999999999999999", "/versions/-1",
		"/config/export?version=%00", "/config/export?version=99999999999999999999", "/config/export?version=1%0D%0AX-Evil:1",
		"/test-route?caller=%00&model=%00", "/test-route?caller=99999999999999999999&model=" + long,
		"/route-groups?edit=%00", "/tiers/1?edit=%FF", "/tiers/%00",
		"/onboarding/templates/%00", "/providers/%00/edit", "/callers/%FF", "/login?next=%00",
		"/settings?x=%00", "/jobs?x=%00", "/health?x=%00",
	} {
		res, _, _ := admin.get(p)
		if res.StatusCode >= 500 {
			t.Errorf("GET %.80s: %d", p, res.StatusCode)
		}
	}
	token, _, _ := e.Store.CreateAdminToken(context.Background(), "ci", store.RoleAdmin, "boss")
	for _, p := range []string{
		"/admin/api/versions/%00", "/admin/api/versions/99999999999999999999", "/admin/api/versions/%00/diff/%FF",
		"/admin/api/versions/draft/diff/99999999999999999999", "/admin/api/providers/%00", "/admin/api/callers/%FF/keys",
		"/admin/api/config/draft?format=%00", "/admin/api/tenants/" + long,
	} {
		if res, _ := apiCall(t, e, http.MethodGet, p, token, ""); res.StatusCode >= 500 {
			t.Errorf("GET %.80s: %d", p, res.StatusCode)
		}
	}
}
