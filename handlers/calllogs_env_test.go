package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"switchyard/calllog"
	"switchyard/gateway/gatewaytest"
)

// obsClient is a signed-in browser against a whole gateway instance (the
// console of gatewaytest, which has the data plane and Ops). The CSRF
// handling follows web/webtest.
type obsClient struct {
	t    testing.TB
	http *http.Client
	base string
	htmx bool
}

func obsLogin(t testing.TB, e *gatewaytest.Env, username, role string) *obsClient {
	t.Helper()
	const pw = "password-for-tests"
	if _, err := e.Store.CreateUser(t.Context(), username, pw, role); err != nil {
		t.Fatalf("create user: %v", err)
	}
	jar, _ := cookiejar.New(nil)
	c := &obsClient{t: t, http: &http.Client{Jar: jar}, base: e.URL}
	nr := *c.http
	nr.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	v := url.Values{"username": {username}, "password": {pw}, "_csrf": {c.csrf()}}
	req, _ := http.NewRequest(http.MethodPost, c.base+"/login", strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := nr.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || strings.HasPrefix(res.Header.Get("Location"), "/login") {
		t.Fatalf("login as %s failed: %d %s", username, res.StatusCode, res.Header.Get("Location"))
	}
	return c
}

func (c *obsClient) csrf() string {
	u, _ := url.Parse(c.base)
	find := func() string {
		for _, ck := range c.http.Jar.Cookies(u) {
			if ck.Name == "switchyard_csrf" {
				return ck.Value
			}
		}
		return ""
	}
	if v := find(); v != "" {
		return v
	}
	if res, err := c.http.Get(c.base + "/login"); err == nil {
		res.Body.Close()
	}
	return find()
}

// asHTMX returns a copy whose requests carry HX-Request: true.
func (c *obsClient) asHTMX() *obsClient {
	cp := *c
	cp.htmx = true
	return &cp
}

func (c *obsClient) do(req *http.Request) (*http.Response, *goquery.Document, string) {
	c.t.Helper()
	if c.htmx {
		req.Header.Set("HX-Request", "true")
	}
	res, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(res.Body)
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		c.t.Fatalf("parse %s: %v", req.URL, err)
	}
	return res, doc, buf.String()
}

func (c *obsClient) get(path string) (*http.Response, *goquery.Document, string) {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, c.base+path, nil)
	return c.do(req)
}

func (c *obsClient) postForm(path string, v url.Values) (*http.Response, *goquery.Document, string) {
	c.t.Helper()
	v = maps.Clone(v)
	if v == nil {
		v = url.Values{}
	}
	if v.Get("_csrf") == "" {
		v.Set("_csrf", c.csrf())
	}
	req, _ := http.NewRequest(http.MethodPost, c.base+path, strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.do(req)
}

func testID(doc *goquery.Document, id string) *goquery.Selection {
	return doc.Find(`[data-testid="` + id + `"]`)
}

// chat sends one chat completion with the caller key and returns the status
// and the request id.
func chat(t testing.TB, e *gatewaytest.Env, key, model, msg string) (int, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": model, "messages": []map[string]string{{"role": "user", "content": msg}}})
	req, _ := http.NewRequest(http.MethodPost, e.URL+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode, res.Header.Get("X-Request-Id")
}

// waitCallLogs polls until the search finds want rows (call logs are
// written asynchronously) and returns them.
func waitCallLogs(t testing.TB, e *gatewaytest.Env, f calllog.Filter, want int) []calllog.Record {
	t.Helper()
	f.Limit = 500
	deadline := time.Now().Add(15 * time.Second)
	var rows []calllog.Record
	for time.Now().Before(deadline) {
		p, err := calllog.Search(context.Background(), e.Store.DB(), f)
		if err != nil {
			t.Fatal(err)
		}
		if rows = p.Rows; len(rows) >= want {
			return rows
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("call logs: %d rows after 15s, want %d", len(rows), want)
	return nil
}
