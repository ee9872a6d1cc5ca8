package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"switchyard/store"
	"switchyard/store/calllog"
	"switchyard/web/gateway/gatewaytest"
	"switchyard/web/webtest"
)

// waitStats polls the hourly roll-up until it counts want requests.
func waitStats(t *testing.T, e *gatewaytest.Env, want int64) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		pts, err := calllog.Series(context.Background(), e.Store.DB(), calllog.SeriesQuery{})
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, p := range pts {
			n += p.Requests
		}
		if n >= want {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("call_stats did not reach %d requests", want)
}

func TestDashboardChartsCostsAndStatesAfterTraffic(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	key := e.Simple()
	viewer := obsLogin(t, e, "watcher", store.RoleViewer)

	// Before traffic: the charts say there is nothing to draw.
	_, doc, _ := viewer.get("/dashboard")
	if testID(doc, "chart-requests").Find(`[data-testid="chart-empty"]`).Length() != 1 {
		t.Fatal("empty range: no empty-chart message")
	}

	for _, tier := range []string{"fast", "standard", "standard", "deep"} {
		if st, _ := consoleChat(t, e, key, tier, "hello"); st != http.StatusOK {
			t.Fatalf("chat %s: %d", tier, st)
		}
	}
	waitStats(t, e, 4)

	res, doc, _ := viewer.get("/dashboard?range=24h")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("dashboard: %d", res.StatusCode)
	}
	if got := testID(doc, "total-requests").Text(); got != "4" {
		t.Errorf("total requests %q, want 4", got)
	}
	for _, id := range []string{"chart-requests", "chart-errors", "chart-latency", "chart-tokens", "chart-cost"} {
		chart := testID(doc, id)
		if chart.Length() != 1 {
			t.Errorf("%s missing", id)
			continue
		}
		if chart.Find(`[data-testid="chart-empty"]`).Length() != 0 {
			t.Errorf("%s says empty after traffic", id)
		}
		if chart.Find(`svg[data-testid="chart-svg"]`).Length() != 1 {
			t.Errorf("%s has no svg", id)
		}
	}
	// The requests chart draws the 4 requests: a path with data and a dot
	// whose tooltip says 4.
	req := testID(doc, "chart-requests")
	path := req.Find(`g[data-series="requests"] path`)
	if d := path.AttrOr("d", ""); !strings.HasPrefix(d, "M") {
		t.Fatalf("requests path d=%q", d)
	}
	found := false
	req.Find(`g[data-series="requests"] circle title`).Each(func(_ int, s *goquery.Selection) {
		if strings.HasSuffix(s.Text(), ": 4") {
			found = true
		}
	})
	if !found {
		t.Error("no point of the requests series says 4")
	}
	if req.Find("text").Length() < 4 {
		t.Error("the chart has no axis labels")
	}

	// Breakdowns and the cost roll-up have the caller's row.
	row := testID(doc, "breakdown-caller").Find(`[data-name="app"]`)
	if row.Length() != 1 || !strings.Contains(row.Text(), "4") {
		t.Fatalf("caller breakdown: %q", testID(doc, "breakdown-caller").Text())
	}
	if testID(doc, "breakdown-tier").Find(`[data-name="standard"]`).Length() != 1 {
		t.Error("tier breakdown lacks standard")
	}
	if testID(doc, "breakdown-logic-model").Find(`[data-name="small"]`).Length() != 1 {
		t.Error("logic model breakdown lacks small")
	}
	costRows := doc.Find(`[data-testid="cost-row"][data-caller="app"]`)
	if costRows.Length() != 3 { // one per tier, all on logic model small
		t.Fatalf("cost rows of app: %d, want 3 (one per tier)", costRows.Length())
	}
	if amt := costRows.First().Find(`[data-testid="cost-amount"]`).Text(); !strings.HasSuffix(amt, "USD") || strings.HasPrefix(amt, "0 ") {
		t.Errorf("cost %q", amt)
	}

	// Breaker and key states of the live deployment.
	rt := e.GW.Holder.Current()
	for id, d := range rt.Deployments {
		cell := testID(doc, "breaker-state-"+itoa(id))
		if cell.Length() != 1 || cell.AttrOr("data-state", "") != "closed" {
			t.Errorf("breaker of deployment %d: %q", id, cell.AttrOr("data-state", ""))
		}
		for _, k := range d.Provider.Keys {
			if st := testID(doc, "key-state-"+itoa(k.ID)).AttrOr("data-status", ""); st != "active" {
				t.Errorf("key %s: %q", k.Fingerprint, st)
			}
		}
	}

	// Grouped series: one line per tier; htmx gets only the body.
	res, doc, body := viewer.asHTMX().get("/dashboard?range=7d&group=tier")
	if res.StatusCode != http.StatusOK || strings.Contains(body, "<html") || testID(doc, "dashboard-body").Length() != 1 {
		t.Fatalf("htmx dashboard: %d", res.StatusCode)
	}
	for _, tier := range []string{"fast", "standard", "deep"} {
		if testID(doc, "chart-requests").Find(`g[data-series="`+tier+`"] path`).Length() != 1 {
			t.Errorf("grouped requests chart lacks a line for %s", tier)
		}
	}
	// 30 days are drawn per day.
	if _, doc, _ = viewer.get("/dashboard?range=30d"); !strings.Contains(testID(doc, "dashboard-window").Text(), "daily") {
		t.Errorf("30d window: %q", testID(doc, "dashboard-window").Text())
	}
}

func TestDashboardWithoutDataPlane(t *testing.T) {
	t.Parallel()
	env := webtest.New(t)
	c := env.Login(t, "watcher", store.RoleViewer)
	res, doc := c.Get("/dashboard?range=1h")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("dashboard: %d", res.StatusCode)
	}
	if !strings.Contains(webtest.TestID(doc, "states-note").Text(), "data plane is not running on this instance") {
		t.Errorf("states note: %q", webtest.TestID(doc, "states-note").Text())
	}
	if webtest.TestID(doc, "chart-requests").Find(`[data-testid="chart-empty"]`).Length() != 1 {
		t.Error("no empty-chart message")
	}
}
