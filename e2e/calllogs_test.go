package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/secrets"
	"switchyard/store/storetest"
)

// callLogWorld is the installation of the call-log scenarios: tier
// standard tries model main on vendor-x first, then spare on vendor-y;
// tier deep is model slow on vendor-y, at most one request at a time.
// Caller checkout-web is unlimited; caller limited-app may send 2 requests
// a minute on tier fast.
type callLogWorld struct {
	s               *Server
	fake            string
	checkout, tight string // caller keys
	xDeployment     int64  // main on vendor-x
	xKeyFingerprint string
}

func newCallLogWorld(t *testing.T) callLogWorld {
	t.Helper()
	dsn := storetest.NewDatabase(t)
	fakeAddr := freePort(t)
	start(t, "fakeupstream", nil, "-addr", fakeAddr)
	key, _ := secrets.ParseKey(storetest.TestKey)
	sealer, _ := secrets.NewSealer(key)
	ctx := context.Background()
	st, err := store.Open(ctx, dsn, sealer)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(); err != nil {
		t.Fatal(err)
	}
	must := func(_ int64, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for name, secret := range map[string]string{"vendor-x": "sk-vendor-x-key-0000xa01", "vendor-y": "sk-vendor-y-key-0000yb02"} {
		pid, err := st.CreateProvider(ctx, config.Provider{Name: name, Protocol: config.ProtocolOpenAI, BaseURL: "http://" + fakeAddr + "/v1", Enabled: true, TimeoutMS: 30000})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.AddProviderKey(ctx, pid, "", secret); err != nil {
			t.Fatal(err)
		}
	}
	w := callLogWorld{fake: "http://" + fakeAddr, xKeyFingerprint: config.KeyFingerprint("sk-vendor-x-key-0000xa01")}
	for _, m := range []struct {
		code string
		d    config.Deployment
	}{
		{"main", config.Deployment{Provider: "vendor-x", UpstreamModel: "main-x", Weight: 100, Enabled: true}},
		{"spare", config.Deployment{Provider: "vendor-y", UpstreamModel: "spare-y", Weight: 100, Enabled: true}},
		{"slow", config.Deployment{Provider: "vendor-y", UpstreamModel: "slow-y", Weight: 100, Enabled: true, MaxConcurrency: 1}},
	} {
		mid, err := st.CreateLogicModel(ctx, config.LogicModel{Code: m.code, Kind: config.KindChat})
		if err != nil {
			t.Fatal(err)
		}
		did, err := st.CreateDeployment(ctx, mid, m.d)
		if err != nil {
			t.Fatal(err)
		}
		if m.code == "main" {
			w.xDeployment = did
		}
	}
	must(st.CreateRouteGroup(ctx, config.RouteGroup{Name: "shop"}))
	snap, _, _ := st.Draft(ctx)
	for _, tr := range snap.RouteGroups[0].Tiers {
		cands := []config.Candidate{{LogicModel: "main", Priority: 1, Weight: 100}, {LogicModel: "spare", Priority: 2, Weight: 100}}
		if tr.Name == config.TierDeep {
			cands = []config.Candidate{{LogicModel: "slow", Weight: 100}}
		}
		for _, c := range cands {
			must(st.AddCandidate(ctx, tr.ID, c))
		}
	}
	_, err = st.CreateCaller(ctx, config.Caller{Name: "checkout-web", RouteGroup: "shop", PriorityClass: config.ClassInteractive, Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.CreateCaller(ctx, config.Caller{Name: "limited-app", RouteGroup: "shop", PriorityClass: config.ClassInteractive, Enabled: true,
		Limits: []config.TierLimit{{Tier: config.TierFast, RPM: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	w.checkout, _, _ = st.CreateCallerKey(ctx, "checkout-web", "e2e", "e2e")
	w.tight, _, _ = st.CreateCallerKey(ctx, "limited-app", "e2e", "e2e")
	if _, err := st.Publish(ctx, store.PublishInput{Author: "seed", Message: "call logs", Check: func(s config.Snapshot) config.Result { return config.DryRun(s, storeEnv) }}); err != nil {
		t.Fatal(err)
	}
	// No class queues on this instance: a call at the deployment's cap is
	// refused at once, which is what the deployment-cap row is about.
	w.s = startServer(t, dsn, "SWITCHYARD_QUEUE_INTERACTIVE=0", "SWITCHYARD_QUEUE_NORMAL=0", "SWITCHYARD_QUEUE_BATCH=0")
	return w
}

// send posts one chat completion and returns its status and request id.
func (w callLogWorld) send(t *testing.T, key, model string) (int, string) {
	req, _ := http.NewRequest(http.MethodPost, w.s.URL+"/v1/chat/completions", strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	res.Body.Close()
	return res.StatusCode, res.Header.Get("X-Request-Id")
}

// fakeCount is how many requests the fake vendor received for model.
func (w callLogWorld) fakeCount(t *testing.T, model string) int64 {
	res, err := http.Get(w.fake + "/_fake/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var st struct {
		Models map[string]struct {
			Requests int64 `json:"requests"`
		} `json:"models"`
	}
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st.Models[model].Requests
}

func (w callLogWorld) fakeRules(t *testing.T, rules string) {
	req, _ := http.NewRequest(http.MethodPut, w.fake+"/_fake/rules", strings.NewReader(rules))
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("fake rules: %v %v", err, res)
	}
	res.Body.Close()
}

// TestCallLogsFindFailedAttemptsPartsAndLimits is issue 16's items 4, 5
// and 9 as an operator meets them in the browser: a call that failed over
// after a 401 is found by the class, provider, deployment and key of the
// failed attempt; the way back from its detail keeps the search and its
// page; the request-id tail the list shows and part of a caller's name
// find calls; a 429 and a deployment-cap 503 say which limit refused.
func TestCallLogsFindFailedAttemptsPartsAndLimits(t *testing.T) {
	w := newCallLogWorld(t)

	// Traffic: 52 plain calls, one that fails over after vendor-x refuses
	// its key, two rate-limited-app calls and a refused third, and a deep
	// call refused while the slow deployment's only slot is busy.
	for deadline := time.Now().Add(5 * time.Second); ; {
		if code, _ := w.send(t, w.checkout, "fast"); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server does not serve the published version")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for range 51 {
		if code, _ := w.send(t, w.checkout, "fast"); code != 200 {
			t.Fatalf("plain call: %d", code)
		}
	}
	w.fakeRules(t, `[{"key":"sk-vendor-x-key-0000xa01","fault":{"status":401}},{"model":"slow-y","fault":{"latency":"1s"}}]`)
	code, failover := w.send(t, w.checkout, "standard")
	if code != 200 {
		t.Fatalf("the failover call: %d", code)
	}
	var limited string
	for i := range 3 {
		code, id := w.send(t, w.tight, "fast")
		if want := []int{200, 200, 429}[i]; code != want {
			t.Fatalf("limited-app call %d: %d, want %d", i+1, code, want)
		}
		if i == 2 {
			limited = id
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if code, _ := w.send(t, w.checkout, "deep"); code != 200 {
			t.Errorf("the deep call holding the slot: %d", code)
		}
	}()
	for deadline := time.Now().Add(5 * time.Second); w.fakeCount(t, "slow-y") == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the first deep call never reached the vendor")
		}
		time.Sleep(10 * time.Millisecond)
	}
	code, capped := w.send(t, w.checkout, "deep")
	if code != http.StatusServiceUnavailable {
		t.Fatalf("the deep call while the only slot is busy: %d, want 503", code)
	}
	wg.Wait()
	db := w.s.sql(t)
	for deadline := time.Now().Add(10 * time.Second); ; {
		var n int
		_ = db.QueryRow(`SELECT count(*) FROM call_logs WHERE request_id = ANY($1)`, "{"+failover+","+limited+","+capped+"}").Scan(&n)
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the call-log rows were not written")
		}
		time.Sleep(100 * time.Millisecond)
	}

	u := &ui{t: t, p: newPage(t), base: w.s.URL}
	u.login("admin", w.s.Admin)
	rows := func() playwright.Locator { return u.p.Locator(`[data-testid^="calllog-row-"]`) }
	only := func(id, what string) {
		t.Helper()
		u.see(u.id("calllog-row-"+id), what)
		if n, _ := rows().Count(); n != 1 {
			t.Fatalf("%s: %d rows, want only %s", what, n, id)
		}
	}
	// settled waits until the results are those of a search with want's
	// parameters (htmx pushes the search's URL when it swaps them in).
	settled := func(want map[string]string) {
		t.Helper()
		u.must(u.p.WaitForURL(func(s string) bool {
			pu, err := url.Parse(s)
			if err != nil {
				return false
			}
			for k, v := range want {
				if pu.Query().Get(k) != v {
					return false
				}
			}
			return true
		}), "the search's results")
		u.must(u.p.Locator("#calllog-filter:not(.htmx-request)").WaitFor(), "the search to finish")
	}
	search := func(want map[string]string) {
		t.Helper()
		u.click(u.id("calllog-filter-submit"), "search")
		settled(want)
	}

	// Item 4: failed attempts are findable.
	{
		u.goto_("/call-logs")
		u.selectOption(u.id("calllog-filter-error-class"), "auth", "error class auth")
		settled(map[string]string{"error_class": "auth"})
		only(failover, "the failover by the class of its failed attempt")
		row := u.id("calllog-row-" + failover)
		if got := u.text(row.GetByTestId("calllog-attempts"), "attempt count"); got != "2 attempts" {
			t.Errorf("attempt count %q", got)
		}
		if title, _ := row.GetByTestId("mark-failover").GetAttribute("title"); !strings.Contains(title, "vendor-x auth → vendor-y ok") {
			t.Errorf("failover marker title %q", title)
		}
		u.goto_("/call-logs")
		u.fill(u.id("calllog-filter-provider"), "vendor-x", "provider")
		u.selectOption(u.id("calllog-filter-status"), "ok", "status ok")
		u.fill(u.id("calllog-filter-caller"), "checkout", "caller part")
		search(map[string]string{"provider": "vendor-x", "status": "ok", "caller": "checkout"})
		u.see(u.id("calllog-row-"+failover), "the failover by the provider that refused it")
		u.goto_("/call-logs")
		u.selectOption(u.id("calllog-filter-tier"), "standard", "tier standard") // vendor-x served every fast call
		u.selectOption(u.id("calllog-filter-deployment"), itoa(w.xDeployment), "vendor-x's deployment")
		u.fill(u.id("calllog-filter-key"), w.xKeyFingerprint, "vendor-x's key")
		search(map[string]string{"tier": "standard", "deployment": itoa(w.xDeployment), "key": w.xKeyFingerprint})
		only(failover, "the failover by the deployment and key that failed")

		// The way back keeps the filters.
		u.click(u.id("calllog-row-"+failover).GetByTestId("calllog-link"), "open the failover")
		u.see(u.id("calllog-detail"), "the detail")
		u.click(u.id("calllog-back"), "← Call logs")
		u.must(u.p.WaitForURL("**/call-logs?**"), "back on the search")
		q, _ := url.ParseQuery(u.p.URL()[strings.Index(u.p.URL(), "?")+1:])
		if q.Get("deployment") != itoa(w.xDeployment) || q.Get("key") != w.xKeyFingerprint {
			t.Errorf("the way back lost the filters: %s", u.p.URL())
		}
		only(failover, "the same search after the way back")
	}

	// Item 4: the way back keeps the page.
	{
		u.goto_("/call-logs?caller=checkout&tier=fast")
		u.see(rows().First(), "page 1")
		u.click(u.id("calllog-next"), "Older →")
		u.see(u.id("calllog-first"), "page 2")
		first := rows().First()
		id, _ := first.GetAttribute("data-testid")
		u.click(first.GetByTestId("calllog-link"), "open a call on page 2")
		u.click(u.id("calllog-back"), "← Call logs")
		u.must(u.p.WaitForURL("**/call-logs?**cursor=**"), "back on page 2")
		u.see(u.id(id), "the same row on the same page")
		u.see(u.id("calllog-first"), "still page 2")
	}

	// Item 5: search for what the list shows.
	{
		u.goto_("/call-logs?error_class=auth")
		shown := strings.TrimSpace(u.text(u.id("calllog-row-"+failover).GetByTestId("calllog-link"), "the id as listed"))
		if !strings.HasPrefix(shown, "…") || !strings.HasSuffix(failover, strings.TrimPrefix(shown, "…")) {
			t.Fatalf("the list shows %q for %s", shown, failover)
		}
		u.goto_("/call-logs")
		u.fill(u.id("calllog-filter-request-id"), shown, "request id as listed")
		search(map[string]string{"request_id": shown})
		only(failover, "the call by the tail the list shows")
		u.goto_("/call-logs")
		u.fill(u.id("calllog-filter-request-id"), failover[:18], "request id head")
		search(map[string]string{"request_id": failover[:18]})
		only(failover, "the call by the head of its id")
		u.goto_("/call-logs")
		u.fill(u.id("calllog-filter-caller"), "LIMITED", "part of a caller name")
		search(map[string]string{"caller": "LIMITED"})
		u.see(u.id("calllog-row-"+limited), "limited-app by part of its name, in capitals")
		if n, _ := rows().Count(); n != 3 {
			t.Errorf("caller part LIMITED: %d rows, want limited-app's 3", n)
		}
	}

	// Item 9: a refusal says which limit.
	{
		u.goto_("/call-logs?caller=limited&status=rejected")
		row := u.id("calllog-row-" + limited)
		if got := u.text(row.GetByTestId("calllog-limit"), "limit in the list"); !strings.Contains(got, "rpm 2") || !strings.Contains(got, "reset") {
			t.Errorf("the list says %q", got)
		}
		u.click(row.GetByTestId("calllog-link"), "open the 429")
		if got := u.text(u.id("calllog-field-limit"), "the limit"); !strings.Contains(got, "rate limit of 2 requests per minute (rpm)") || !strings.Contains(got, "after the refusal") {
			t.Errorf("the 429's limit says %q", got)
		}
		u.goto_("/call-logs/" + capped)
		if got := u.text(u.id("calllog-field-limit"), "the cap"); !strings.Contains(got, "deployment cap") || !strings.Contains(got, "1 slots") {
			t.Errorf("the 503's limit says %q", got)
		}
		if got := u.text(u.id("calllog-rejection"), "why"); !strings.Contains(got, "max concurrency") {
			t.Errorf("the 503 is explained as %q", got)
		}
	}
}
