package calllog

import (
	"testing"
	"time"
)

// Migration 0004 turns every money column into bigint micro-units, keeping
// existing rows' amounts (rounded to the micro where a float had more).
func TestMoneyMigrationConvertsExistingRows(t *testing.T) {
	db := newEmptySchema(t)
	before, err := migrationText(func(n string) bool { return n < "0004" })
	if err != nil {
		t.Fatal(err)
	}
	money, err := migrationText(func(n string) bool { return len(n) > 4 && n[:4] == "0004" })
	if err != nil || money == "" {
		t.Fatalf("migration 0004 not found: %v", err)
	}
	if _, err := db.Exec(before); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`
		INSERT INTO providers (name, protocol, base_url) VALUES ('p', 'openai', 'https://x.example');
		INSERT INTO logic_models (code, kind) VALUES ('m', 'chat');
		INSERT INTO deployments (logic_model_id, provider_id, upstream_model, price_input, price_output, price_cached)
			SELECT m.id, p.id, 'u', 2.5, 0.000001, 1000000 FROM logic_models m, providers p;
		INSERT INTO route_groups (name) VALUES ('g');
		INSERT INTO callers (name, route_group_id, monthly_budget, budget_currency)
			SELECT 'c', id, 1234.5678, 'EUR' FROM route_groups;
		INSERT INTO call_logs (at, request_id, status, http_status, latency_ms, cost, currency)
			VALUES ('2026-04-01T10:00:00Z', 'a', 'ok', 200, 5, 0.0125, 'USD'),
			       ('2026-04-01T10:00:01Z', 'b', 'ok', 200, 5, 0.00000049999, 'USD'),
			       ('2026-04-01T10:00:02Z', 'c', 'rejected', 429, 1, NULL, NULL);
		INSERT INTO cost_rollups (day, caller, tier, logic_model, currency, cost)
			VALUES ('2026-04-01', 'c', 'fast', 'm', 'USD', 3.0000005);
		INSERT INTO call_stats (hour, caller, tier, logic_model, currency, cost, latency_hist)
			VALUES ('2026-04-01T10:00:00Z', 'c', 'fast', 'm', 'USD', 0.1, array_fill(0::bigint, ARRAY[25]));`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(money); err != nil {
		t.Fatalf("migration 0004: %v", err)
	}
	var in, out, cached, budget, rollup, stat int64
	if err := db.QueryRow(`SELECT price_input_micros, price_output_micros, price_cached_micros FROM deployments`).Scan(&in, &out, &cached); err != nil {
		t.Fatal(err)
	}
	if in != 2_500_000 || out != 1 || cached != 1_000_000_000_000 {
		t.Errorf("prices = %d %d %d", in, out, cached)
	}
	if err := db.QueryRow(`SELECT monthly_budget_micros FROM callers`).Scan(&budget); err != nil || budget != 1_234_567_800 {
		t.Errorf("budget = %d, %v", budget, err)
	}
	costs := map[string]*int64{}
	rows, err := db.Query(`SELECT request_id, cost_micros FROM call_logs`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var c *int64
		if err := rows.Scan(&id, &c); err != nil {
			t.Fatal(err)
		}
		costs[id] = c
	}
	rows.Close()
	if costs["a"] == nil || *costs["a"] != 12_500 || costs["b"] == nil || *costs["b"] != 0 || costs["c"] != nil {
		t.Errorf("call-log costs = a %v b %v c %v", costs["a"], costs["b"], costs["c"])
	}
	if err := db.QueryRow(`SELECT cost_micros FROM cost_rollups`).Scan(&rollup); err != nil || rollup != 3_000_001 {
		t.Errorf("cost roll-up = %d, %v (3.0000005 rounds half away from zero)", rollup, err)
	}
	if err := db.QueryRow(`SELECT cost_micros FROM call_stats`).Scan(&stat); err != nil || stat != 100_000 {
		t.Errorf("call stats cost = %d, %v", stat, err)
	}
	// The converted tables take new rows through the writer (whose columns
	// later migrations add to).
	later, err := migrationText(func(n string) bool { return n >= "0005" })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(later); err != nil {
		t.Fatalf("migrations after 0004: %v", err)
	}
	cost := int64(7)
	r := Record{At: time.Date(2026, 4, 1, 11, 0, 0, 0, time.UTC), RequestID: "d", Status: StatusOK, HTTPStatus: 200, Caller: "c", Tier: "fast",
		LogicModel: "m", CostMicros: &cost, Currency: "USD"}
	if err := normalize(&r); err != nil {
		t.Fatal(err)
	}
	if _, err := insertBatch(t.Context(), db, []Record{r}); err != nil {
		t.Fatalf("insert after migration: %v", err)
	}
	if err := db.QueryRow(`SELECT cost_micros FROM cost_rollups`).Scan(&rollup); err != nil || rollup != 3_000_008 {
		t.Errorf("cost roll-up after a new call = %d, %v", rollup, err)
	}
}
