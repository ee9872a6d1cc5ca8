package gateway_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"

	"switchyard/routing"
	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/web/gateway/gatewaytest"
)

// row is the part of a call-log row these tests look at.
type row struct {
	Status, Class, Code                sql.NullString
	HTTP                               int
	Caller, Tier, LogicModel, Provider sql.NullString
	Deployment                         sql.NullInt64
	Prompt, Completion                 sql.NullInt64
	Attempts                           sql.NullString
	ConfigVersion                      sql.NullInt64
}

func rowsFor(t *testing.T, db *sql.DB, requestID string) []row {
	t.Helper()
	rs, err := db.Query(`SELECT status, error_class, error_code, http_status, caller, tier, logic_model, provider, deployment_id,
		prompt_tokens, completion_tokens, attempts::text, config_version FROM call_logs WHERE request_id = $1`, requestID)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.Status, &r.Class, &r.Code, &r.HTTP, &r.Caller, &r.Tier, &r.LogicModel, &r.Provider, &r.Deployment,
			&r.Prompt, &r.Completion, &r.Attempts, &r.ConfigVersion); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// waitRow polls until the asynchronous writer stored the request's row.
func waitRow(t *testing.T, db *sql.DB, requestID string) row {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rs := rowsFor(t, db, requestID)
		if len(rs) > 1 {
			t.Fatalf("request %s has %d call-log rows", requestID, len(rs))
		}
		if len(rs) == 1 {
			return rs[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no call-log row for %s after 10 s", requestID)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestEveryRejectIsOneRowWithoutModelFields(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	b := e.Build()
	b.Provider("fake", config.ProtocolOpenAI, "", "sk-fake-key-0000-0001")
	b.Provider("fake2", config.ProtocolOpenAI, "", "sk-fake2-key-0000-0002")
	b.Model(config.LogicModel{Code: "small", Kind: config.KindChat}, config.Deployment{Provider: "fake", UpstreamModel: "fake-small", Weight: 100, Enabled: true, Prices: config.Prices{InputMicros: 100 * config.Unit, OutputMicros: 100 * config.Unit, Currency: "USD"}})
	b.Model(config.LogicModel{Code: "spare", Kind: config.KindChat}, config.Deployment{Provider: "fake2", UpstreamModel: "fake-spare", Weight: 100, Enabled: true})
	all := []config.Candidate{{LogicModel: "small", Weight: 100}}
	b.Group("default", map[config.TierName][]config.Candidate{config.TierFast: all, config.TierStandard: all, config.TierDeep: {{LogicModel: "spare", Weight: 100}}})
	_, key := b.Caller(config.Caller{Name: "app", RouteGroup: "default", Limits: []config.TierLimit{{Tier: config.TierFast, RPM: 1}, {Tier: config.TierStandard, DailyTokens: 10}}})
	_, broke := b.Caller(config.Caller{Name: "broke", RouteGroup: "default", MonthlyBudgetMicros: 100, BudgetCurrency: "USD"})
	e.Publish("rejects")
	// Spend the budget of "broke", then let it be refused.
	if res, _ := post(t, e, broke, "/v1/chat/completions", hello); res.StatusCode != 200 {
		t.Fatal("first request of broke should pass")
	}
	// Make deep's only deployment unusable: its provider's only key is quarantined.
	e.GW.Keys.Quarantine(2, routing.KeyFault{Class: adapter.ClassAuth, Status: 401, Detail: "test: key rejected"})
	cases := []struct {
		name, key, body, idemKey string
		status                   int
		code, class              string
		caller                   bool
	}{
		{"bad key", "sy-wrong", hello, "", 401, "invalid_api_key", "auth", false},
		{"invalid request", key, `{"model":"fast","messages":[]}`, "", 400, "invalid_request", "bad_request", true},
		{"unknown model", key, `{"model":"gpt-9","messages":[{"role":"user","content":"x"}]}`, "", 404, "model_not_found", "bad_request", true},
		{"rate limited", key, fastHello, "", 429, "rate_limited", "rate_limited", true},
		{"quota", key, `{"model":"standard","max_tokens":50,"messages":[{"role":"user","content":"x"}]}`, "", 429, "quota_exceeded", "quota_exceeded", true},
		{"budget", broke, hello, "", 429, "budget_exceeded", "budget_exceeded", true},
		{"no available model", key, `{"model":"deep","messages":[{"role":"user","content":"x"}]}`, "", 503, "no_available_model", "", true},
	}
	// One successful fast request first, so the second is rate limited.
	if res, _ := post(t, e, key, "/v1/chat/completions", fastHello); res.StatusCode != 200 {
		t.Fatal("warm-up failed")
	}
	db := e.Store.DB()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, body := post(t, e, tc.key, "/v1/chat/completions", tc.body)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, body)
			}
			r := waitRow(t, db, res.Header.Get("X-Request-Id"))
			if r.Status.String != "rejected" || r.Code.String != tc.code || r.Class.String != tc.class || r.HTTP != tc.status {
				t.Fatalf("row: status %q code %q class %q http %d", r.Status.String, r.Code.String, r.Class.String, r.HTTP)
			}
			if r.LogicModel.Valid || r.Provider.Valid || r.Deployment.Valid || r.Prompt.Valid || r.Completion.Valid {
				t.Fatalf("model fields of a rejected call must be NULL: %+v", r)
			}
			if r.Caller.Valid != tc.caller {
				t.Fatalf("caller recorded %v, want %v", r.Caller, tc.caller)
			}
			var presented sql.NullString
			_ = db.QueryRowContext(context.Background(), `SELECT presented_key FROM call_logs WHERE request_id = $1`, res.Header.Get("X-Request-Id")).Scan(&presented)
			if want := config.PresentedKeyFingerprint(tc.key); presented.String != want || strings.Contains(presented.String, tc.key) {
				t.Fatalf("presented key fingerprint %q, want %q (never the key)", presented.String, want)
			}
			if tc.code == "no_available_model" && !strings.Contains(r.Attempts.String, "keys_quarantined") {
				t.Fatalf("the trail should carry the skip reason: %s", r.Attempts.String)
			}
		})
	}
	// An idempotency conflict is a row too.
	_, _ = post(t, e, broke, "/v1/chat/completions", `{"model":"standard","messages":[{"role":"user","content":"a"}]}`, "Idempotency-Key", "k1")
	res, _ := post(t, e, broke, "/v1/chat/completions", `{"model":"standard","messages":[{"role":"user","content":"b"}]}`, "Idempotency-Key", "k1")
	if res.StatusCode == 422 {
		if r := waitRow(t, db, res.Header.Get("X-Request-Id")); r.Code.String != "idempotency_conflict" || r.LogicModel.Valid {
			t.Fatalf("idempotency conflict row: %+v", r)
		}
	} else if res.StatusCode != 429 { // the budget may refuse first; that is a row as well
		t.Fatalf("idempotency conflict: %d", res.StatusCode)
	}
}

func TestPostgresDownLosesNoCallLogs(t *testing.T) {
	e := gatewaytest.New(t, gatewaytest.Options{ProxyPostgres: true})
	key := e.Simple()
	direct, err := sql.Open("postgres", e.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	e.PGProxy.Cut()
	const n = 40
	ids := make([]string, 0, n)
	for i := range n {
		res, body := post(t, e, key, "/v1/chat/completions", fmt.Sprintf(`{"model":"fast","messages":[{"role":"user","content":"n%d"}]}`, i))
		if res.StatusCode != 200 {
			t.Fatalf("request %d with PostgreSQL down: %d %s", i, res.StatusCode, body)
		}
		ids = append(ids, res.Header.Get("X-Request-Id"))
	}
	time.Sleep(500 * time.Millisecond) // the writer tries, fails, spills
	if e.GW.CallLog.SpillBytes() == 0 {
		t.Fatal("nothing spilled while PostgreSQL was down")
	}
	e.PGProxy.Restore()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got int
		q := `SELECT count(DISTINCT request_id) FROM call_logs WHERE request_id = ANY($1)`
		if err := direct.QueryRow(q, pqArray(ids)).Scan(&got); err != nil {
			t.Fatal(err)
		}
		var total int
		_ = direct.QueryRow(`SELECT count(*) FROM call_logs WHERE request_id = ANY($1)`, pqArray(ids)).Scan(&total)
		if got == n && total == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after PostgreSQL returned: %d of %d requests logged (%d rows)", got, n, total)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func pqArray(ids []string) any { return pq.Array(ids) }

func TestUnservableRequestsSpendNoLimitAndListingsAreLogged(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	b := e.Build()
	b.Provider("fake", config.ProtocolOpenAI, "", "sk-fake-key-0000-0001")
	b.Model(config.LogicModel{Code: "small", Kind: config.KindChat}, config.Deployment{Provider: "fake", UpstreamModel: "fake-small", Weight: 100, Enabled: true})
	all := []config.Candidate{{LogicModel: "small", Weight: 100}}
	b.Group("g", map[config.TierName][]config.Candidate{config.TierFast: all, config.TierStandard: all, config.TierDeep: all})
	_, key := b.Caller(config.Caller{Name: "app", RouteGroup: "g", Limits: []config.TierLimit{{Tier: config.TierDeep, RPM: 1}}})
	e.Publish("unservable")
	e.GW.Keys.Quarantine(1, routing.KeyFault{Class: adapter.ClassAuth, Status: 401, Detail: "test: rejected key"}) // the only key: nothing can serve
	for i := range 2 {
		res, body := post(t, e, key, "/v1/chat/completions", `{"model":"deep","messages":[{"role":"user","content":"x"}]}`)
		if code, _ := errCode(t, body); res.StatusCode != 503 || code != "no_available_model" {
			t.Fatalf("request %d: %d %s (an unservable request must not spend the RPM of 1)", i, res.StatusCode, body)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, e.URL+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("models: %v %v", err, res)
	}
	res.Body.Close()
	if r := waitRow(t, e.Store.DB(), res.Header.Get("X-Request-Id")); r.Status.String != "ok" || r.LogicModel.Valid || r.HTTP != 200 {
		t.Fatalf("models listing row: %+v", r)
	}
}
