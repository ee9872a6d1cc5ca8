package gateway_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/calllog"
	"switchyard/web/gateway/gatewaytest"
)

// rpmWorld is the simple world with caller "app" limited to rpm requests a
// minute on every tier. It returns the caller key.
func rpmWorld(e *gatewaytest.Env, rpm int64) string {
	b := e.Build()
	b.Provider("fake", config.ProtocolOpenAI, "", "sk-fake-key-one-0001")
	b.Model(config.LogicModel{Code: "small", Kind: config.KindChat}, config.Deployment{Provider: "fake", UpstreamModel: "fake-small", Weight: 100, Enabled: true,
		Prices: config.Prices{InputMicros: config.Unit, OutputMicros: 2 * config.Unit, CachedMicros: config.Unit / 2, Currency: "USD"}})
	all := []config.Candidate{{LogicModel: "small", Weight: 100}}
	b.Group("default", map[config.TierName][]config.Candidate{config.TierFast: all, config.TierStandard: all, config.TierDeep: all})
	var lim []config.TierLimit
	for _, t := range config.TierNames {
		lim = append(lim, config.TierLimit{Tier: t, RPM: rpm})
	}
	_, key := b.Caller(config.Caller{Name: "app", RouteGroup: "default", Limits: lim})
	e.Publish("rpm world")
	return key
}

func TestCallLogSearchFindsRateLimitedRequestAndExplainsIt(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	key := rpmWorld(e, 1)
	if st, _ := consoleChat(t, e, key, "standard", "first"); st != http.StatusOK {
		t.Fatalf("first request: %d", st)
	}
	st, rejectedID := consoleChat(t, e, key, "standard", "second")
	if st != http.StatusTooManyRequests || rejectedID == "" {
		t.Fatalf("second request: %d (request id %q), want 429", st, rejectedID)
	}
	waitCallLogs(t, e, calllog.Filter{Caller: "app"}, 2)

	viewer := obsLogin(t, e, "watcher", store.RoleViewer)
	res, doc, _ := viewer.get("/call-logs?caller=app&status=rejected&range=1h")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("search: %d", res.StatusCode)
	}
	rows := doc.Find(`tr[data-testid^="calllog-row-"]`)
	if rows.Length() != 1 {
		t.Fatalf("rejected rows of app: %d, want 1", rows.Length())
	}
	row := testID(doc, "calllog-row-"+rejectedID)
	if row.Length() != 1 {
		t.Fatalf("the rate-limited request %s is not in the results", rejectedID)
	}
	if got := strings.TrimSpace(row.Find(`[data-testid="calllog-error-class"]`).Text()); !strings.Contains(got, "rate_limited") {
		t.Errorf("error class cell = %q", got)
	}
	// No vendor was called for a rejected call: it says nothing was spent,
	// not "unknown" tokens and cost.
	if got := row.Find(`[data-testid="calllog-tokens"] [data-testid="nothing-spent"]`).Length(); got != 1 || row.Find(`[data-testid="unknown"]`).Length() != 0 {
		t.Errorf("the rejected row's tokens and cost: %q, want nothing spent", row.Find(`[data-testid="calllog-tokens"]`).Text())
	}
	// The form keeps the filter (the URL is shareable).
	if v, _ := testID(doc, "calllog-filter-caller").Attr("value"); v != "app" {
		t.Errorf("caller filter shows %q", v)
	}
	if v, _ := testID(doc, "calllog-filter-status").Find("option[selected]").Attr("value"); v != "rejected" {
		t.Errorf("status filter shows %q", v)
	}

	// The ok row has real token counts.
	_, doc, _ = viewer.get("/call-logs?caller=app&status=ok")
	okRow := doc.Find(`tr[data-testid^="calllog-row-"]`)
	if okRow.Length() != 1 || okRow.Find(`[data-testid="calllog-tokens"] [data-testid="unknown"]`).Length() != 0 {
		t.Fatalf("ok rows: %d, tokens %q", okRow.Length(), okRow.Find(`[data-testid="calllog-tokens"]`).Text())
	}

	// The detail explains the rejection in words.
	href, _ := row.Find(`[data-testid="calllog-link"]`).Attr("href")
	res, doc, _ = viewer.get(href)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("detail %s: %d", href, res.StatusCode)
	}
	words := testID(doc, "calllog-rejection").Text()
	for _, want := range []string{"before any vendor call", "caller app", "rate limit", "tier standard", "429"} {
		if !strings.Contains(words, want) {
			t.Errorf("rejection %q does not say %q", words, want)
		}
	}
	if got := testID(doc, "calllog-field-error-code").Text(); got != "rate_limited" {
		t.Errorf("error code field = %q", got)
	}
	if testID(doc, "trail-empty").Length() != 1 {
		t.Error("a rejected call without attempts should say no attempt was made")
	}
	// Without the time hint the id's own timestamp finds the row too.
	if res, _, _ := viewer.get("/call-logs/" + rejectedID); res.StatusCode != http.StatusOK {
		t.Errorf("detail without at: %d", res.StatusCode)
	}
	if res, _, _ := viewer.get("/call-logs/no-such-request"); res.StatusCode != http.StatusNotFound {
		t.Errorf("unknown request id: %d, want 404", res.StatusCode)
	}
}

func TestCallLogDetailShowsTheAttemptTrail(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	key := e.Simple()
	st, id := consoleChat(t, e, key, "fast", "hello")
	if st != http.StatusOK {
		t.Fatalf("chat: %d", st)
	}
	waitCallLogs(t, e, calllog.Filter{RequestID: id}, 1)
	admin := obsLogin(t, e, "ops", store.RoleAdmin)
	_, doc, _ := admin.get("/call-logs/" + id)
	steps := testID(doc, "trail-step")
	if steps.Length() != 1 {
		t.Fatalf("trail steps: %d, want 1", steps.Length())
	}
	if o, _ := steps.Attr("data-outcome"); o != "ok" || !steps.HasClass("ok") {
		t.Fatalf("step outcome %q, class %q", o, steps.AttrOr("class", ""))
	}
	if w := steps.Find(`[data-testid="trail-words"]`).Text(); !strings.Contains(w, "answered with key sk-") {
		t.Errorf("trail words: %q", w)
	}
	if testID(doc, "calllog-rejection").Length() != 0 {
		t.Error("a served call shows a rejection")
	}
}

func TestCallLogKeysetPaginationHasNoDuplicatesOrGaps(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	// 130 rows on five timestamps: pages (50 rows) must break ties by
	// request id.
	base := time.Now().Add(-10 * time.Minute).UTC().Truncate(time.Second)
	const n = 130
	for i := range n {
		e.GW.CallLog.Write(calllog.Record{At: base.Add(time.Duration(i%5) * time.Second), RequestID: fmt.Sprintf("page-%03d", i),
			Caller: "pager", Tier: "fast", Status: calllog.StatusOK, HTTPStatus: 200, LatencyMS: i})
	}
	waitCallLogs(t, e, calllog.Filter{Caller: "pager"}, n)
	// Rows of another caller must not leak in.
	e.GW.CallLog.Write(calllog.Record{At: base, RequestID: "other-1", Caller: "other", Status: calllog.StatusOK})
	waitCallLogs(t, e, calllog.Filter{Caller: "other"}, 1)

	viewer := obsLogin(t, e, "watcher", store.RoleViewer)
	seen := map[string]bool{}
	var order []string
	path := "/call-logs?caller=pager&range=1h"
	pages := 0
	for path != "" {
		pages++
		if pages > 10 {
			t.Fatal("pagination does not end")
		}
		res, doc, _ := viewer.get(path)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", path, res.StatusCode)
		}
		doc.Find(`tr[data-testid^="calllog-row-"]`).Each(func(_ int, s *goquery.Selection) {
			id := strings.TrimPrefix(s.AttrOr("data-testid", ""), "calllog-row-")
			if seen[id] {
				t.Errorf("row %s repeated on page %d", id, pages)
			}
			seen[id] = true
			order = append(order, id)
		})
		path = testID(doc, "calllog-next").AttrOr("href", "")
		if path != "" && !strings.Contains(path, "anchor=") {
			t.Errorf("the next link does not pin the time range: %s", path)
		}
	}
	if len(seen) != n || pages != 3 {
		t.Fatalf("saw %d rows on %d pages, want %d on 3", len(seen), pages, n)
	}
	// Newest first: timestamps descending, ties by request id descending.
	for i := 1; i < len(order); i++ {
		a, b := order[i-1], order[i]
		var ia, ib int
		fmt.Sscanf(a, "page-%d", &ia)
		fmt.Sscanf(b, "page-%d", &ib)
		if ia%5 < ib%5 || (ia%5 == ib%5 && a < b) {
			t.Fatalf("order broken at %d: %s before %s", i, a, b)
		}
	}
}

func TestCallLogHTMXReturnsOnlyTheResultsFragment(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	key := e.Simple()
	_, id := consoleChat(t, e, key, "standard", "hi")
	waitCallLogs(t, e, calllog.Filter{RequestID: id}, 1)
	viewer := obsLogin(t, e, "watcher", store.RoleViewer)

	res, doc, body := viewer.asHTMX().get("/call-logs?caller=app&range=15m")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("htmx search: %d", res.StatusCode)
	}
	if strings.Contains(body, "<html") || testID(doc, "nav").Length() != 0 || testID(doc, "calllog-filter-form").Length() != 0 {
		t.Fatal("htmx search returned more than the results fragment")
	}
	if testID(doc, "calllog-results").Length() != 1 || testID(doc, "calllog-row-"+id).Length() != 1 {
		t.Fatalf("fragment lacks the results or the row: %s", body)
	}
	if !strings.Contains(strings.Join(res.Header.Values("Vary"), ","), "HX-Request") {
		t.Error("no Vary: HX-Request")
	}
	// The full page has the form wired for htmx with a pushed URL.
	_, doc, _ = viewer.get("/call-logs?caller=app")
	form := testID(doc, "calllog-filter-form")
	if form.AttrOr("hx-get", "") != "/call-logs" || form.AttrOr("hx-push-url", "") != "true" || form.AttrOr("method", "") != "get" {
		t.Fatalf("filter form attributes: %v", form.Nodes[0].Attr)
	}

	// Nothing matched: the empty state suggests widening the range.
	_, doc, _ = viewer.asHTMX().get("/call-logs?caller=nobody&range=15m")
	if testID(doc, "calllog-empty").Length() != 1 {
		t.Fatal("no empty state")
	}
	if href := testID(doc, "calllog-widen").AttrOr("href", ""); !strings.Contains(href, "range=7d") || !strings.Contains(href, "caller=nobody") {
		t.Errorf("widen link %q", href)
	}
	// A bad filter is reported, not a 500.
	res, doc, _ = viewer.get("/call-logs?status=bogus")
	if res.StatusCode != http.StatusUnprocessableEntity || testID(doc, "calllog-error").Length() != 1 {
		t.Errorf("bad status filter: %d", res.StatusCode)
	}
	res, _, _ = viewer.get("/call-logs?" + url.Values{"range": {"custom"}, "from": {"2026-01-02T10:00"}, "to": {"2026-01-01T10:00"}}.Encode())
	if res.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("from after to: %d", res.StatusCode)
	}
}
