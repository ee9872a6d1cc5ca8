package traces

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/secrets"
	"switchyard/store/storetest"
)

// seed publishes two route groups on the fake vendor: "main" (content not
// exported) for caller "app" and "open" (content exported) for caller
// "open-app". Tier fast serves "small" alone; tier standard tries "flaky"
// first, whose deployment the fake vendor fails with a 500 and whose other
// deployment is disabled (a skip), then "small". It returns the two
// callers' keys.
func seed(t *testing.T, dsn, fakeURL string) (appKey, openKey string) {
	t.Helper()
	key, _ := secrets.ParseKey(storetest.TestKey)
	sealer, _ := secrets.NewSealer(key)
	ctx := context.Background()
	st, err := store.Open(ctx, dsn, sealer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(); err != nil {
		t.Fatal(err)
	}
	must := func(_ int64, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	pid, err := st.CreateProvider(ctx, config.Provider{Name: "fake", Protocol: config.ProtocolOpenAI, BaseURL: fakeURL + "/v1", Enabled: true, TimeoutMS: 30000})
	must(pid, err)
	if _, err := st.AddProviderKey(ctx, pid, "main", "sk-traces-provider-key-01"); err != nil {
		t.Fatal(err)
	}
	deployments := map[string][]config.Deployment{
		"small": {{Provider: "fake", UpstreamModel: "fake-small", Weight: 100, Enabled: true}},
		"flaky": {{Provider: "fake", UpstreamModel: "fake-flaky", Weight: 100, Enabled: true}, {Provider: "fake", UpstreamModel: "fake-off", Weight: 100}},
	}
	for code, ds := range deployments {
		mid, err := st.CreateLogicModel(ctx, config.LogicModel{Code: code, Kind: config.KindChat})
		must(mid, err)
		for _, d := range ds {
			must(st.CreateDeployment(ctx, mid, d))
		}
	}
	must(st.CreateRouteGroup(ctx, config.RouteGroup{Name: "main"}))
	must(st.CreateRouteGroup(ctx, config.RouteGroup{Name: "open", TraceContent: true}))
	snap, _, err := st.Draft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range snap.RouteGroups {
		for _, tr := range g.Tiers {
			if tr.Name == config.TierStandard {
				must(st.AddCandidate(ctx, tr.ID, config.Candidate{LogicModel: "flaky", Priority: 1, Weight: 100}))
				must(st.AddCandidate(ctx, tr.ID, config.Candidate{LogicModel: "small", Priority: 2, Weight: 100}))
				continue
			}
			must(st.AddCandidate(ctx, tr.ID, config.Candidate{LogicModel: "small", Weight: 100}))
		}
	}
	must(st.CreateCaller(ctx, config.Caller{Name: "app", RouteGroup: "main", PriorityClass: config.ClassInteractive, Enabled: true}))
	must(st.CreateCaller(ctx, config.Caller{Name: "open-app", RouteGroup: "open", PriorityClass: config.ClassInteractive, Enabled: true}))
	env := adapter.Support()
	if _, err := st.Publish(ctx, store.PublishInput{Author: "seed", Message: "traces", Check: func(s config.Snapshot) config.Result { return config.DryRun(s, env) }}); err != nil {
		t.Fatal(err)
	}
	appKey, _, err = st.CreateCallerKey(ctx, "app", "traces", "e2e")
	if err != nil {
		t.Fatal(err)
	}
	openKey, _, err = st.CreateCallerKey(ctx, "open-app", "traces", "e2e")
	if err != nil {
		t.Fatal(err)
	}
	return appKey, openKey
}

func putFake(t *testing.T, url, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("PUT %s: %d", url, res.StatusCode)
	}
}

// vendorSaw is the traceparent of each call the vendor got.
type vendorSaw struct {
	mu  sync.Mutex
	got []string
}

func (v *vendorSaw) all() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.got...)
}

// recording puts a proxy in front of the vendor at target that notes the
// traceparent of every call.
func recording(t *testing.T, target string, saw *vendorSaw) string {
	t.Helper()
	u, _ := neturl.Parse(target)
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			saw.mu.Lock()
			saw.got = append(saw.got, r.Header.Get("Traceparent"))
			saw.mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// gateway starts the fake vendor and switchyard exporting to j over proto
// (http/protobuf or grpc); it returns the gateway's URL and the callers'
// keys. saw notes the trace context the vendor got; propagate allows it
// (SWITCHYARD_TRACE_PROPAGATE).
func gateway(t *testing.T, j jaeger, proto string, saw *vendorSaw, propagate bool) (url, appKey, openKey string) {
	t.Helper()
	dsn := storetest.NewDatabase(t)
	fakeAddr := freePort(t)
	fake := start(t, "fakeupstream", binDir+"/fakeupstream", nil, "-addr", fakeAddr)
	waitOK(t, "http://"+fakeAddr+"/_fake/stats", fake)
	putFake(t, "http://"+fakeAddr+"/_fake/rules", `[{"model":"fake-flaky","fault":{"Status":500}}]`)
	vendor := recording(t, "http://"+fakeAddr, saw)
	extra := []string{"SWITCHYARD_TRACE_PROPAGATE=" + strconv.FormatBool(propagate)}
	appKey, openKey = seed(t, dsn, vendor)
	endpoint := "http://" + j.otlpHTTP
	if proto == "grpc" {
		endpoint = "http://" + j.otlpGRPC
	}
	addr := freePort(t)
	prefix := "sytraces" + dsn[strings.LastIndex(dsn, "/")+1:]
	cleanRedis(t, prefix)
	p := start(t, "switchyard", binDir+"/switchyard", append([]string{
		"SWITCHYARD_ADDR=" + addr, "SWITCHYARD_DATABASE_URL=" + dsn, "SWITCHYARD_SECRET_KEY=" + storetest.TestKey,
		"SWITCHYARD_ADMIN_PASSWORD=traces-admin-password", "SWITCHYARD_SPILL_DIR=" + t.TempDir(), "SWITCHYARD_LOG_FORMAT=text",
		"SWITCHYARD_REDIS_URL=" + redisURL(), "SWITCHYARD_REDIS_PREFIX=" + prefix, "SWITCHYARD_REDIS_TIMEOUT=1s",
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL=" + proto,
		"OTEL_SERVICE_NAME=switchyard-" + strings.ReplaceAll(proto, "/", "-"), "OTEL_BSP_SCHEDULE_DELAY=100",
	}, extra...))
	waitOK(t, "http://"+addr+"/healthz", p)
	return "http://" + addr, appKey, openKey
}

func redisURL() string {
	if v := os.Getenv("SWITCHYARD_TEST_REDIS_URL"); v != "" {
		return v
	}
	return "redis://127.0.0.1:6379/0"
}

// cleanRedis deletes the gateway's Redis keys once it stopped.
func cleanRedis(t *testing.T, prefix string) {
	t.Cleanup(func() {
		opt, err := redis.ParseURL(redisURL())
		if err != nil {
			return
		}
		rdb := redis.NewClient(opt)
		defer rdb.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		iter := rdb.Scan(ctx, 0, prefix+":*", 500).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
	})
}

// chat sends a chat completion and returns its request id.
func chat(t *testing.T, url, key, model, traceparent string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions",
		strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"the secret plan"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	if traceparent != "" {
		req.Header.Set("traceparent", traceparent)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("chat %s: %d %s", model, res.StatusCode, body)
	}
	return res.Header.Get("X-Request-Id")
}

// Jaeger's query API (/api/traces) as far as the test reads it.
type (
	jTrace struct {
		TraceID string  `json:"traceID"`
		Spans   []jSpan `json:"spans"`
	}
	jSpan struct {
		TraceID       string `json:"traceID"`
		SpanID        string `json:"spanID"`
		OperationName string `json:"operationName"`
		References    []struct {
			RefType string `json:"refType"`
			TraceID string `json:"traceID"`
			SpanID  string `json:"spanID"`
		} `json:"references"`
		Tags []jKV `json:"tags"`
		Logs []struct {
			Fields []jKV `json:"fields"`
		} `json:"logs"`
	}
	jKV struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	}
)

func tags(kvs []jKV) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[kv.Key] = fmt.Sprint(kv.Value)
	}
	return m
}

func (s jSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// traces polls Jaeger until the service has traces whose request spans
// carry every id in rids, and returns them by request id.
func traces(t *testing.T, j jaeger, service string, rids ...string) map[string]jTrace {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var got map[string]jTrace
	for time.Now().Before(deadline) {
		got = map[string]jTrace{}
		res, err := http.Get("http://" + j.query + "/api/traces?service=" + service + "&limit=100&lookback=1h")
		if err == nil {
			var out struct{ Data []jTrace }
			_ = json.NewDecoder(res.Body).Decode(&out)
			res.Body.Close()
			for _, tr := range out.Data {
				for _, s := range tr.Spans {
					if rid := tags(s.Tags)["switchyard.request_id"]; rid != "" {
						if _, dup := got[rid]; dup {
							t.Fatalf("request %s is in more than one trace", rid)
						}
						got[rid] = tr
					}
				}
			}
		}
		all := true
		for _, rid := range rids {
			_, ok := got[rid]
			all = all && ok
		}
		if all {
			return got
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("Jaeger has traces for %d of the %d requests after 30s", len(got), len(rids))
	return nil
}

// request splits a trace into its request span and the attempt spans,
// checking that the trace holds exactly one request span and that every
// other span is its child.
func request(t *testing.T, tr jTrace) (req jSpan, attempts []jSpan) {
	t.Helper()
	n := 0
	for _, s := range tr.Spans {
		if tags(s.Tags)["span.kind"] == "server" {
			req, n = s, n+1
		}
	}
	if n != 1 {
		t.Fatalf("trace %s has %d request spans", tr.TraceID, n)
	}
	for _, s := range tr.Spans {
		if s.SpanID == req.SpanID {
			continue
		}
		if s.parent() != req.SpanID || tags(s.Tags)["span.kind"] != "client" {
			t.Errorf("span %q is not an attempt under the request span", s.OperationName)
		}
		attempts = append(attempts, s)
	}
	return req, attempts
}

const (
	callerTrace = "0af7651916cd43dd8448eb211c80319c"
	callerSpan  = "b7ad6b7169203331"
)

// The gateway's traces, read back from Jaeger: one trace per request, the
// caller's trace continued, attempts as children of the request span with
// the GenAI attributes, a skip as an event, content only for the group
// that exports it.
func TestTracesReachJaeger(t *testing.T) {
	j := startJaeger(t)
	saw := &vendorSaw{}
	url, appKey, openKey := gateway(t, j, "http/protobuf", saw, false)

	continued := chat(t, url, appKey, "fast", "00-"+callerTrace+"-"+callerSpan+"-01")
	failover := chat(t, url, appKey, "standard", "")
	content := chat(t, url, openKey, "fast", "")
	got := traces(t, j, "switchyard-http-protobuf", continued, failover, content)

	tr := got[continued]
	req, attempts := request(t, tr)
	if tr.TraceID != callerTrace || req.parent() != callerSpan {
		t.Errorf("trace %s, parent %s: the caller's trace context was not continued", tr.TraceID, req.parent())
	}
	if len(attempts) != 1 {
		t.Fatalf("%d attempt spans, want 1", len(attempts))
	}
	want := map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "fast",
		"gen_ai.response.model": "fake-small", "switchyard.tier": "fast", "switchyard.route_group": "main", "switchyard.caller": "app"}
	rt := tags(req.Tags)
	for k, v := range want {
		if rt[k] != v {
			t.Errorf("request span %s = %q, want %q", k, rt[k], v)
		}
	}
	for _, k := range []string{"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"} {
		if rt[k] == "" || rt[k] == "0" {
			t.Errorf("request span %s = %q", k, rt[k])
		}
	}
	if at := tags(attempts[0].Tags); at["gen_ai.request.model"] != "fake-small" || at["switchyard.attempt.outcome"] != "ok" {
		t.Errorf("attempt span tags %v", at)
	}
	if _, ok := rt["gen_ai.input.messages"]; ok {
		t.Error("group main exported the prompt")
	}
	if got := saw.all(); len(got) != 4 || strings.Join(got, "") != "" {
		t.Errorf("propagation off: the vendor's 4 calls got trace context %q", got)
	}

	req, attempts = request(t, got[failover])
	if got[failover].TraceID == callerTrace || len(attempts) != 2 {
		t.Fatalf("failover: trace %s with %d attempts, want a new trace with 2", got[failover].TraceID, len(attempts))
	}
	outcomes := map[string]string{}
	for _, a := range attempts {
		at := tags(a.Tags)
		outcomes[at["gen_ai.request.model"]] = at["switchyard.attempt.outcome"] + " " + at["http.response.status_code"]
	}
	if outcomes["fake-flaky"] != "failed 500" || !strings.HasPrefix(outcomes["fake-small"], "ok") {
		t.Errorf("attempts %v, want fake-flaky failed 500 then fake-small ok", outcomes)
	}
	skipped := false
	for _, l := range req.Logs {
		f := tags(l.Fields)
		skipped = skipped || (f["event"] == "switchyard.skip" && f["switchyard.skip.reason"] == "disabled_by_operator")
	}
	if !skipped {
		t.Errorf("no skip event for the disabled deployment: %+v", req.Logs)
	}

	req, _ = request(t, got[content])
	ct := tags(req.Tags)
	if !strings.Contains(ct["gen_ai.input.messages"], "the secret plan") || ct["gen_ai.output.messages"] == "" || ct["switchyard.route_group"] != "open" {
		t.Errorf("group open's content: input %q output %q", ct["gen_ai.input.messages"], ct["gen_ai.output.messages"])
	}
}

// OTLP over gRPC reaches the collector as well; with propagation allowed,
// the vendor is called with the attempt span's trace context.
func TestTracesOverGRPCPropagatedToTheVendor(t *testing.T) {
	j := startJaeger(t)
	saw := &vendorSaw{}
	url, appKey, _ := gateway(t, j, "grpc", saw, true)
	rid := chat(t, url, appKey, "fast", "00-"+callerTrace+"-"+callerSpan+"-01")
	tr := traces(t, j, "switchyard-grpc", rid)[rid]
	req, attempts := request(t, tr)
	if len(attempts) != 1 || tags(req.Tags)["gen_ai.request.model"] != "fast" {
		t.Fatalf("grpc trace: %d attempts, tags %v", len(attempts), tags(req.Tags))
	}
	want := "00-" + callerTrace + "-" + attempts[0].SpanID + "-01"
	if got := saw.all(); len(got) != 1 || got[0] != want {
		t.Errorf("the vendor got traceparent %q, want the attempt's %s", got, want)
	}
}
