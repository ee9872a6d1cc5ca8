package gateway_test

import (
	"encoding/csv"
	"net/http"
	"strings"
	"testing"

	"switchyard/routing"
	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/calllog"
	"switchyard/web/gateway/gatewaytest"
)

// unservableWorld: tier fast is served; tier deep's only model is on a
// provider whose only key the vendor refused (quarantined), so a deep
// request is a 503 no vendor sees.
func unservableWorld(e *gatewaytest.Env) string {
	b := e.Build()
	b.Provider("fake", config.ProtocolOpenAI, "", "sk-fake-key-one-0001")
	b.Provider("keyless", config.ProtocolOpenAI, "", "sk-refused-key-0002")
	b.Model(config.LogicModel{Code: "small", Kind: config.KindChat}, config.Deployment{Provider: "fake", UpstreamModel: "fake-small", Weight: 100, Enabled: true})
	b.Model(config.LogicModel{Code: "ghost", Kind: config.KindChat}, config.Deployment{Provider: "keyless", UpstreamModel: "ghost-1", Weight: 100, Enabled: true})
	all := []config.Candidate{{LogicModel: "small", Weight: 100}}
	b.Group("default", map[config.TierName][]config.Candidate{config.TierFast: all, config.TierStandard: all, config.TierDeep: {{LogicModel: "ghost", Weight: 100}}})
	_, key := b.Caller(config.Caller{Name: "app", RouteGroup: "default"})
	e.Publish("unservable deep")
	e.GW.Keys.Quarantine(2, routing.KeyFault{Class: adapter.ClassAuth, Status: 401, Detail: "test: key refused"})
	return key
}

func TestCallLogsFindByHTTPStatusErrorCodeAndPresentedKeyAndExport(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	key := unservableWorld(e)
	if st, _ := consoleChat(t, e, key, "fast", "ok"); st != http.StatusOK {
		t.Fatalf("fast: %d", st)
	}
	st, unservable := consoleChat(t, e, key, "deep", "nothing")
	if st != http.StatusServiceUnavailable {
		t.Fatalf("deep: %d, want 503", st)
	}
	const stranger = "sy-Strngr0000000000000000000000000000000000"
	st, unknown := consoleChat(t, e, stranger, "fast", "who")
	if st != http.StatusUnauthorized {
		t.Fatalf("unknown key: %d, want 401", st)
	}
	waitCallLogs(t, e, calllog.Filter{}, 3)
	viewer := obsLogin(t, e, "watcher", store.RoleViewer)

	only := func(path, id string) {
		t.Helper()
		res, doc, _ := viewer.get(path)
		rows := doc.Find(`tr[data-testid^="calllog-row-"]`)
		if res.StatusCode != http.StatusOK || rows.Length() != 1 || testID(doc, "calllog-row-"+id).Length() != 1 {
			t.Fatalf("%s: %d, %d rows, want only %s", path, res.StatusCode, rows.Length(), id)
		}
	}
	only("/call-logs?range=1h&http_status=503", unservable)
	only("/call-logs?range=1h&error_code=no_available_model", unservable)
	fp := config.PresentedKeyFingerprint(stranger)
	only("/call-logs?range=1h&caller_key="+fp, unknown)

	// The 401 row names the key it presented, and says nothing was spent.
	_, doc, body := viewer.get("/call-logs?range=1h&http_status=401")
	row := testID(doc, "calllog-row-"+unknown)
	if got := testID(doc, "calllog-caller-key").Text(); got != fp || strings.Contains(body, stranger) {
		t.Errorf("the 401 row's key is %q, want %q (and never the key)", got, fp)
	}
	if row.Find(`[data-testid="nothing-spent"]`).Length() != 1 || row.Find(`[data-testid="unknown"]`).Length() != 0 {
		t.Errorf("the 401 row's tokens and cost: %q", row.Find(`[data-testid="calllog-tokens"]`).Text())
	}

	// A bad value is refused in words and kept in the form.
	res, doc, _ := viewer.get("/call-logs?range=1h&http_status=5x3&caller=app")
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(testID(doc, "calllog-error").Text(), "HTTP status must be a number") {
		t.Errorf("bad HTTP status: %d %q", res.StatusCode, testID(doc, "calllog-error").Text())
	}
	if v, _ := testID(doc, "calllog-filter-http-status").Attr("value"); v != "5x3" {
		t.Errorf("the bad value was not kept: %q", v)
	}
	if v, _ := testID(doc, "calllog-filter-caller").Attr("value"); v != "app" {
		t.Errorf("the other filters were lost: caller %q", v)
	}

	// The 503's detail leads with the concrete skip.
	_, doc, _ = viewer.get("/call-logs/" + unservable)
	lead := testID(doc, "calllog-skip-lead").Text()
	if !strings.Contains(lead, "tier deep") || !strings.Contains(lead, "all keys are quarantined") {
		t.Errorf("the 503 detail leads with %q", lead)
	}
	if testID(doc, "calllog-rejection").Length() != 0 {
		t.Error("the generic rejection words repeat the skips")
	}

	// The export is the filtered rows as CSV, keys only as fingerprints.
	res, _, csvText := viewer.get("/call-logs/export.csv?range=1h&http_status=401")
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/csv") ||
		!strings.Contains(res.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("export: %d %q %q", res.StatusCode, res.Header.Get("Content-Type"), res.Header.Get("Content-Disposition"))
	}
	lines, err := csv.NewReader(strings.NewReader(csvText)).ReadAll()
	if err != nil || len(lines) != 2 || lines[0][0] != "time_utc" || lines[1][1] != unknown || lines[1][4] != fp {
		t.Fatalf("export: %v %q", err, lines)
	}
	if strings.Contains(csvText, stranger) || strings.Contains(csvText, "sk-refused-key-0002") {
		t.Fatal("the export holds a key")
	}
	if res, _, _ := viewer.get("/call-logs/export.csv?http_status=0"); res.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("bad export filter: %d, want 422", res.StatusCode)
	}

	// Live tail polls the first page only when asked; the custom range's
	// fields are no tab stops unless the range is custom.
	_, doc, _ = viewer.get("/call-logs?range=1h&tail=1")
	if trig, _ := testID(doc, "calllog-results").Attr("hx-trigger"); !strings.HasPrefix(trig, "every ") {
		t.Errorf("live tail trigger %q", trig)
	}
	_, doc, _ = viewer.get("/call-logs?range=1h")
	if _, polls := testID(doc, "calllog-results").Attr("hx-trigger"); polls {
		t.Error("the results poll without live tail")
	}
	if _, off := testID(doc, "calllog-filter-from").Attr("disabled"); !off {
		t.Error("the from field is a tab stop on a preset range")
	}
	_, doc, _ = viewer.get("/call-logs?range=custom")
	if _, off := testID(doc, "calllog-filter-from").Attr("disabled"); off {
		t.Error("the from field is disabled on a custom range")
	}
}

// Test route says one thing about an unservable tier (red, no send
// button), explains the draft without sending it, and words the retry
// budget plainly.
func TestTestRouteVerdictDraftAndBudgetWords(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	unservableWorld(e)
	app := e.GW.Holder.Current().Snapshot.Callers[0].ID
	admin := obsLogin(t, e, "ops", store.RoleAdmin)

	_, doc, _ := admin.get(explainURL(app, "deep"))
	if v, _ := testID(doc, "testroute-overall").Attr("data-verdict"); v != "refused" || !strings.Contains(testID(doc, "testroute-overall").Text(), "503 no_available_model") {
		t.Errorf("deep's verdict: %q %q", v, testID(doc, "testroute-overall").Text())
	}
	if doc.Find(`[data-testid="testroute-verdict"] .badge.ok`).Length() != 0 || testID(doc, "testroute-verdict-unservable").Length() != 1 {
		t.Errorf("the limit check contradicts the verdict: %q", testID(doc, "testroute-verdict").Text())
	}
	if testID(doc, "testroute-send").Length() != 0 || testID(doc, "testroute-nothing-to-send").Length() != 1 {
		t.Error("an unservable tier still offers a test request")
	}
	_, doc, _ = admin.get(explainURL(app, "fast"))
	if v, _ := testID(doc, "testroute-overall").Attr("data-verdict"); v != "served" || testID(doc, "testroute-send").Length() != 1 {
		t.Errorf("fast's verdict %q, send buttons %d", v, testID(doc, "testroute-send").Length())
	}
	words := testID(doc, "testroute-retry-budget-state").Text()
	if !strings.Contains(words, "first attempts") || !strings.Contains(words, "may be made now") || strings.Contains(words, "in a window of") {
		t.Errorf("retry budget words: %q", words)
	}

	// A caller only the draft has: explained on the draft, never sent.
	id, err := e.Store.CreateCaller(t.Context(), config.Caller{Name: "newcomer", RouteGroup: "default", PriorityClass: config.ClassNormal, Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	_, doc, _ = admin.get(explainURL(id, "fast") + "&version=draft")
	if testID(doc, "testroute-step").Length() == 0 || !strings.Contains(testID(doc, "testroute-target").Text(), "the draft") {
		t.Fatalf("draft explanation: %q", testID(doc, "testroute-explain").Text())
	}
	if testID(doc, "testroute-send").Length() != 0 || testID(doc, "testroute-draft-note").Length() != 1 {
		t.Error("the draft offers a real test request")
	}
	_, doc, _ = admin.get(explainURL(id, "fast"))
	if !strings.Contains(testID(doc, "testroute-problem").Text(), "not in the live version") {
		t.Errorf("the live version explains a draft-only caller: %q", testID(doc, "testroute-explain").Text())
	}
}
