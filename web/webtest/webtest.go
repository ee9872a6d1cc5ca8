// Package webtest runs the console against a fresh PostgreSQL database for
// handler tests: a real server, a cookie jar, and CSRF tokens handled the
// way a browser form would send them.
package webtest

import (
	"bytes"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/labstack/echo/v4"

	"switchyard/handlers"
	"switchyard/routing/adapter"
	"switchyard/store"
	"switchyard/store/calllog"
	"switchyard/store/storetest"
	"switchyard/web"
)

// Env is one running console on its own database.
type Env struct {
	Store   *store.Store
	DSN     string
	Server  *httptest.Server
	Handler *handlers.Handler
	// Echo is the server's router (its routes, for tests that walk them).
	Echo *echo.Echo
}

// Implemented is the protocol support of this build (adapter.Support).
var Implemented = adapter.Support()

// New starts a console on a fresh database. configure may adjust the
// handler (e.g. set KeyStates) before the server starts.
func New(t testing.TB, configure ...func(*handlers.Handler)) *Env {
	t.Helper()
	st, dsn := storetest.New(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	sm := web.NewSessions(st, false)
	h := &handlers.Handler{Sessions: sm, Log: log, Env: Implemented, BaseURL: "http://gateway.test"}
	h.UseStorage(st, calllog.Reader{DB: st.DB()})
	for _, f := range configure {
		f(h)
	}
	srv := web.New(h, nil, st, sm, log, nil, web.Options{})
	ts := httptest.NewServer(srv.Echo)
	t.Cleanup(ts.Close)
	return &Env{Store: st, DSN: dsn, Server: ts, Handler: h, Echo: srv.Echo}
}

// Client is a signed-in browser.
type Client struct {
	t    testing.TB
	HTTP *http.Client
	Base string
	// HTMX makes requests look like htmx requests (HX-Request: true).
	HTMX bool
}

// Login creates a user with that role and signs in.
func (e *Env) Login(t testing.TB, username, role string) *Client {
	t.Helper()
	return LoginAt(t, e.Store, e.Server.URL, username, role)
}

// LoginAt creates a user in st and signs in to the console at base (any
// running server, e.g. a whole gateway instance).
func LoginAt(t testing.TB, st *store.Store, base, username, role string) *Client {
	t.Helper()
	const pw = "password-for-tests"
	if _, err := st.CreateUser(t.Context(), username, pw, role); err != nil {
		t.Fatalf("webtest: create user: %v", err)
	}
	jar, _ := cookiejar.New(nil)
	c := &Client{t: t, HTTP: &http.Client{Jar: jar}, Base: base}
	res, _ := c.NoRedirects().PostForm("/login", url.Values{"username": {username}, "password": {pw}})
	if res.StatusCode != http.StatusSeeOther || strings.HasPrefix(res.Header.Get("Location"), "/login") {
		t.Fatalf("webtest: login as %s failed: %d %s", username, res.StatusCode, res.Header.Get("Location"))
	}
	return c
}

// Anonymous returns a client without a session.
func (e *Env) Anonymous(t testing.TB) *Client {
	jar, _ := cookiejar.New(nil)
	return &Client{t: t, HTTP: &http.Client{Jar: jar}, Base: e.Server.URL}
}

// NoRedirects stops the client following redirects (to assert them).
func (c *Client) NoRedirects() *Client {
	cp := *c
	h := *c.HTTP
	h.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	cp.HTTP = &h
	return &cp
}

func (c *Client) csrf() string {
	u, _ := url.Parse(c.Base)
	for _, ck := range c.HTTP.Jar.Cookies(u) {
		if ck.Name == "switchyard_csrf" {
			return ck.Value
		}
	}
	// No cookie yet: any GET issues one.
	res, err := c.HTTP.Get(c.Base + "/login")
	if err == nil {
		res.Body.Close()
	}
	for _, ck := range c.HTTP.Jar.Cookies(u) {
		if ck.Name == "switchyard_csrf" {
			return ck.Value
		}
	}
	return ""
}

func (c *Client) do(req *http.Request) (*http.Response, *goquery.Document) {
	c.t.Helper()
	res, doc, _ := c.send(req)
	return res, doc
}

// send makes the request and returns the response, its parsed document and
// its raw text.
func (c *Client) send(req *http.Request) (*http.Response, *goquery.Document, string) {
	c.t.Helper()
	if c.HTMX {
		req.Header.Set("HX-Request", "true")
	}
	res, err := c.HTTP.Do(req)
	if err != nil {
		c.t.Fatalf("webtest: %s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatalf("webtest: read %s: %v", req.URL, err)
	}
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		c.t.Fatalf("webtest: parse %s: %v", req.URL, err)
	}
	return res, doc, string(body)
}

// Get fetches a page.
func (c *Client) Get(path string) (*http.Response, *goquery.Document) {
	c.t.Helper()
	res, doc, _ := c.GetRaw(path)
	return res, doc
}

// GetRaw fetches a page and also returns its raw text.
func (c *Client) GetRaw(path string) (*http.Response, *goquery.Document, string) {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, c.Base+path, nil)
	return c.send(req)
}

// PostForm posts a form with the session's CSRF token, as a browser would.
func (c *Client) PostForm(path string, v url.Values) (*http.Response, *goquery.Document) {
	c.t.Helper()
	res, doc, _ := c.PostFormRaw(path, v)
	return res, doc
}

// PostFormRaw posts a form and also returns the answer's raw text.
func (c *Client) PostFormRaw(path string, v url.Values) (*http.Response, *goquery.Document, string) {
	c.t.Helper()
	v = maps.Clone(v)
	if v == nil {
		v = url.Values{}
	}
	if v.Get("_csrf") == "" {
		v.Set("_csrf", c.csrf())
	}
	req, _ := http.NewRequest(http.MethodPost, c.Base+path, strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.send(req)
}

// TestID finds elements by data-testid.
func TestID(doc *goquery.Document, id string) *goquery.Selection {
	return doc.Find(`[data-testid="` + id + `"]`)
}
