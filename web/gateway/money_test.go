package gateway_test

import (
	"context"
	"testing"
	"time"

	"switchyard/routing/config"
	"switchyard/web/gateway/gatewaytest"
)

// A served call is priced in integer micro-units: the call log's cost and
// the caller's monthly spend are exactly Prices.CostMicros of its usage.
func TestServedCallIsPricedAndChargedInMicros(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	b := e.Build()
	b.Provider("fake", config.ProtocolOpenAI, "", "sk-fake-key-0000-0001")
	// Prices a float would not hold exactly: 100.1, 300.3 and 70.07 per 1M tokens.
	prices := config.Prices{InputMicros: 100_100_000, OutputMicros: 300_300_000, CachedMicros: 70_070_000, Currency: "EUR"}
	b.Model(config.LogicModel{Code: "small", Kind: config.KindChat}, config.Deployment{Provider: "fake", UpstreamModel: "fake-small", Weight: 100, Enabled: true, Prices: prices})
	all := []config.Candidate{{LogicModel: "small", Weight: 100}}
	b.Group("default", map[config.TierName][]config.Candidate{config.TierFast: all, config.TierStandard: all, config.TierDeep: all})
	id, key := b.Caller(config.Caller{Name: "payer", RouteGroup: "default", MonthlyBudgetMicros: 1000 * config.Unit, BudgetCurrency: "EUR"})
	e.Publish("money")

	var spent int64
	for range 3 {
		res, body := post(t, e, key, "/v1/chat/completions", hello)
		if res.StatusCode != 200 {
			t.Fatalf("status %d: %s", res.StatusCode, body)
		}
		db := e.Store.DB()
		waitRow(t, db, res.Header.Get("X-Request-Id"))
		var prompt, completion, cached, cost int64
		var currency string
		if err := db.QueryRow(`SELECT prompt_tokens, completion_tokens, coalesce(cached_tokens, 0), cost_micros, currency
			FROM call_logs WHERE request_id = $1`, res.Header.Get("X-Request-Id")).Scan(&prompt, &completion, &cached, &cost, &currency); err != nil {
			t.Fatal(err)
		}
		if want := prices.CostMicros(prompt, completion, cached); cost != want || currency != "EUR" || prompt+completion == 0 {
			t.Fatalf("cost_micros %d %s for %d/%d/%d tokens, want %d EUR", cost, currency, prompt, completion, cached, want)
		}
		spent += cost
	}
	if spent <= 0 {
		t.Fatalf("nothing was charged (%d micros)", spent)
	}
	// Settling runs after the answer is sent: wait for the spend to arrive.
	deadline := time.Now().Add(5 * time.Second)
	for {
		u, err := e.GW.Limiter.Usage(context.Background(), id, string(config.TierStandard))
		if err != nil {
			t.Fatal(err)
		}
		if u.MonthSpentMicros == spent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("month spent %d micros, want %d (the sum of the call-log costs)", u.MonthSpentMicros, spent)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
