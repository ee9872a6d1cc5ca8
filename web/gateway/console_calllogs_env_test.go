package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"switchyard/store/calllog"
	"switchyard/web/gateway/gatewaytest"
	"switchyard/web/webtest"
)

// obsClient is a signed-in browser against a whole gateway instance (the
// console of gatewaytest, which has the data plane and Ops).
type obsClient struct{ *webtest.Client }

func obsLogin(t testing.TB, e *gatewaytest.Env, username, role string) *obsClient {
	t.Helper()
	return &obsClient{webtest.LoginAt(t, e.Store, e.URL, username, role)}
}

// asHTMX returns a copy whose requests carry HX-Request: true.
func (c *obsClient) asHTMX() *obsClient {
	cp := *c.Client
	cp.HTMX = true
	return &obsClient{&cp}
}

func (c *obsClient) get(path string) (*http.Response, *goquery.Document, string) {
	return c.GetRaw(path)
}

func (c *obsClient) postForm(path string, v url.Values) (*http.Response, *goquery.Document, string) {
	return c.PostFormRaw(path, v)
}

func testID(doc *goquery.Document, id string) *goquery.Selection {
	return doc.Find(`[data-testid="` + id + `"]`)
}

// chat sends one chat completion with the caller key and returns the status
// and the request id.
func consoleChat(t testing.TB, e *gatewaytest.Env, key, model, msg string) (int, string) {
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
