package config

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestParseMicros(t *testing.T) {
	ok := map[string]Micros{
		"0": 0, "2": 2 * Unit, "2.5": 2_500_000, "0.000001": 1, ".5": 500_000, "5.": 5 * Unit,
		"-1.25": -1_250_000, "+3": 3 * Unit, " 7.10 ": 7_100_000, "0.1000000000": 100_000,
		// Forms older float snapshots were written in (YAML 'g' format, JSON).
		"1e-06": 1, "2.5e+06": 2_500_000 * Unit, "1E6": Unit * 1_000_000,
		"0.075": 75_000, "1000000000000": MaxMicros,
	}
	for in, want := range ok {
		got, err := ParseMicros(in)
		if err != nil || got != want {
			t.Errorf("ParseMicros(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	bad := map[string]string{
		"":                        "empty",
		"abc":                     "not a decimal",
		"1,5":                     "not a decimal",
		".":                       "not a decimal",
		"1.2.3":                   "not a decimal",
		"0x10":                    "not a decimal",
		"NaN":                     "not a decimal",
		".inf":                    "not a decimal",
		"1e":                      "not a decimal",
		"0.0000001":               "more than 6 decimal places",
		"2.5000001":               "more than 6 decimal places",
		"1.5e-6":                  "more than 6 decimal places",
		"1000000000001":           "too large",
		"1e30":                    "too large",
		"99999999999999999999999": "too large",
	}
	for in, why := range bad {
		_, err := ParseMicros(in)
		if !errors.Is(err, ErrMoney) || !strings.Contains(err.Error(), why) {
			t.Errorf("ParseMicros(%q) error = %v; want %q", in, err, why)
		}
		// Forms tell these apart by the sentinel, never by the text.
		if got, want := errors.Is(err, ErrMoneyPrecision), why == "more than 6 decimal places"; got != want {
			t.Errorf("ParseMicros(%q): errors.Is(ErrMoneyPrecision) = %v", in, got)
		}
		if got, want := errors.Is(err, ErrMoneyRange), why == "too large"; got != want {
			t.Errorf("ParseMicros(%q): errors.Is(ErrMoneyRange) = %v", in, got)
		}
	}
}

func TestMicrosStringRoundTrips(t *testing.T) {
	for _, m := range []Micros{0, 1, 10, 999_999, Unit, 2_500_000, 1_234_567_890, -1, -2_500_000, MaxMicros, math.MaxInt64, math.MinInt64 + 1} {
		s := m.String()
		if m == math.MaxInt64 || m == math.MinInt64+1 {
			if s != "9223372036854.775807" && s != "-9223372036854.775807" {
				t.Errorf("String(%d) = %q", m, s)
			}
			continue
		}
		back, err := ParseMicros(s)
		if err != nil || back != m {
			t.Errorf("%d -> %q -> %d, %v", m, s, back, err)
		}
	}
	for m, want := range map[Micros]string{2_500_000: "2.5", 3 * Unit: "3", 1: "0.000001", -1_250_000: "-1.25", 100_000: "0.1"} {
		if got := m.String(); got != want {
			t.Errorf("String(%d) = %q, want %q", m, got, want)
		}
	}
	for m, want := range map[Micros]string{2_500_000: "2.50", 3 * Unit: "3.00", 123: "0.000123", 0: "0.00", -50_000: "-0.05"} {
		if got := m.Fixed(2); got != want {
			t.Errorf("Fixed(2) of %d = %q, want %q", m, got, want)
		}
	}
}

// An old snapshot wrote prices and budgets as floats, in YAML (shortest 'g'
// format) or JSON; it must decode to the same amounts, and re-encode as
// plain decimals.
func TestOldFloatSnapshotsDecodeToTheSameAmounts(t *testing.T) {
	yamlText := `format: switchyard/v1
logic_models:
  - code: m
    kind: chat
    deployments:
      - provider: p
        upstream_model: u
        prices:
          input: 0.15
          output: 1e+06
          cached: 7.5e-05
          currency: USD
callers:
  - name: c
    route_group: g
    priority_class: batch
    monthly_budget: 250.5
    budget_currency: EUR
`
	jsonText := `{"format":"switchyard/v1","logic_models":[{"code":"m","kind":"chat","deployments":[{"provider":"p","upstream_model":"u",
		"prices":{"input":0.15,"output":1000000,"cached":0.000075,"currency":"USD"}}]}],
		"callers":[{"name":"c","route_group":"g","priority_class":"batch","monthly_budget":250.5,"budget_currency":"EUR"}]}`
	for name, text := range map[string]string{"yaml": yamlText, "json": jsonText} {
		s, err := Decode([]byte(text))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		p := s.LogicModels[0].Deployments[0].Prices
		if p.InputMicros != 150_000 || p.OutputMicros != 1_000_000*Unit || p.CachedMicros != 75 {
			t.Errorf("%s: prices decoded as %+v", name, p)
		}
		if b := s.Callers[0].MonthlyBudgetMicros; b != 250_500_000 {
			t.Errorf("%s: budget decoded as %d", name, b)
		}
		out, err := Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"input: 0.15\n", "output: 1000000\n", "cached: 0.000075\n", "monthly_budget: 250.5\n"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("%s: canonical text lacks %q:\n%s", name, want, out)
			}
		}
		again, err := Decode(out)
		if err != nil || again.LogicModels[0].Deployments[0].Prices != p {
			t.Errorf("%s: canonical text does not round-trip: %v", name, err)
		}
	}
}

func TestNullAmountsAreZero(t *testing.T) {
	s, err := Decode([]byte("format: switchyard/v1\ncallers:\n  - name: c\n    route_group: g\n    monthly_budget:\n"))
	if err != nil || s.Callers[0].MonthlyBudgetMicros != 0 {
		t.Fatalf("null budget: %v, %+v", err, s.Callers)
	}
	p := Prices{InputMicros: 5}
	if err := json.Unmarshal([]byte(`{"input":null}`), &p); err != nil || p.InputMicros != 5 {
		t.Fatalf("JSON null: %v, %+v", err, p)
	}
}

func TestSnapshotRefusesSubMicroAmounts(t *testing.T) {
	text := "format: switchyard/v1\ncallers:\n  - name: c\n    route_group: g\n    monthly_budget: 0.0000001\n"
	_, err := Decode([]byte(text))
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "more than 6 decimal places") {
		t.Fatalf("want a precision error, got %v", err)
	}
}

func TestMicrosJSON(t *testing.T) {
	b, err := json.Marshal(Prices{InputMicros: 2_500_000, OutputMicros: 10 * Unit, CachedMicros: 1, Currency: "USD"})
	if err != nil || string(b) != `{"input":2.5,"output":10,"cached":0.000001,"currency":"USD"}` {
		t.Fatalf("marshal = %s, %v", b, err)
	}
	var p Prices
	if err := json.Unmarshal([]byte(`{"input":"2.5","output":10,"cached":1e-6}`), &p); err != nil || p.InputMicros != 2_500_000 || p.OutputMicros != 10*Unit || p.CachedMicros != 1 {
		t.Fatalf("unmarshal = %+v, %v", p, err)
	}
	if err := json.Unmarshal([]byte(`{"input":0.1234567}`), &p); err == nil || !strings.Contains(err.Error(), "6 decimal places") {
		t.Fatalf("sub-micro JSON price accepted: %v", err)
	}
}

func TestCostMicros(t *testing.T) {
	p := Prices{InputMicros: 2_500_000, OutputMicros: 10 * Unit, CachedMicros: 1_250_000} // 2.5 / 10 / 1.25 per 1M
	cases := []struct {
		prompt, completion, cached, want int64
	}{
		{0, 0, 0, 0},
		{1_000_000, 0, 0, 2_500_000},
		{1000, 500, 0, 2500 + 5000},
		{1000, 500, 400, 600*5/2 + 400*5/4 + 5000}, // 1500 + 500 + 5000
		{1, 0, 0, 3},                               // 2.5 µ rounds half up
		{0, 0, 5, 0},                               // cached never exceeds the prompt
		{-5, -5, -5, 0},
		{3, 0, 5, 4}, // cached clamped to 3: 3 × 1.25 = 3.75 → 4
	}
	for _, c := range cases {
		if got := p.CostMicros(c.prompt, c.completion, c.cached); got != c.want {
			t.Errorf("CostMicros(%d, %d, %d) = %d, want %d", c.prompt, c.completion, c.cached, got, c.want)
		}
	}
	// Rounding happens once, on the sum: 0.4 µ + 0.4 µ is 1 µ.
	q := Prices{InputMicros: 400_000, OutputMicros: 400_000}
	if got := q.CostMicros(1, 1, 0); got != 1 {
		t.Errorf("sum rounding: got %d, want 1", got)
	}
	if got := q.CostMicros(1, 0, 0); got != 0 {
		t.Errorf("0.4 µ rounds to 0, got %d", got)
	}
	// Large counts and prices do not overflow: 10^12 tokens at the maximum price.
	big := Prices{InputMicros: MaxPriceMicros}
	if got := big.CostMicros(1_000_000_000_000, 0, 0); got != int64(MaxPriceMicros)*1_000_000 {
		t.Errorf("large cost = %d", got)
	}
	if got := big.CostMicros(math.MaxInt64, 0, 0); got != math.MaxInt64 {
		t.Errorf("overflowing cost must saturate, got %d", got)
	}
}

func TestBudgetCurrencyMismatchBlocksDryRun(t *testing.T) {
	s := validSnapshot()
	for i := range s.LogicModels {
		for j := range s.LogicModels[i].Deployments {
			s.LogicModels[i].Deployments[j].Prices.Currency = "USD"
		}
	}
	s.Callers[0].MonthlyBudgetMicros, s.Callers[0].BudgetCurrency = 100*Unit, "USD"
	if r := DryRun(s, testEnv); r.Blocking() {
		t.Fatalf("matching currencies blocked: %v", r.Errors())
	}
	// One deployment of "big" (reached through standard and deep) is priced in CNY.
	s.LogicModels[1].Deployments[0].Prices.Currency = "CNY"
	r := DryRun(s, testEnv)
	var got []Finding
	for _, f := range r.Findings {
		if f.Check == CheckBudgetCurrencyMismatch {
			got = append(got, f)
		}
	}
	if len(got) != 1 || got[0].Severity != SeverityError || !r.Blocking() {
		t.Fatalf("want one blocking %s finding, got %+v", CheckBudgetCurrencyMismatch, got)
	}
	f := got[0]
	if f.Object.Kind != "caller" || f.Object.Name != "contracts" || f.Params["budget_currency"] != "USD" || f.Params["price_currency"] != "CNY" ||
		f.Params["logic_model"] != "big" || !strings.Contains(f.Message, "CNY") {
		t.Errorf("finding = %+v", f)
	}
	// A caller without a budget is never charged, so any currency is fine;
	// an empty budget currency is the default, USD.
	s.Callers[0].MonthlyBudgetMicros = 0
	if r := DryRun(s, testEnv); r.Blocking() {
		t.Errorf("caller without a budget blocked: %v", r.Errors())
	}
	s.Callers[0].MonthlyBudgetMicros, s.Callers[0].BudgetCurrency = Unit, ""
	if r := DryRun(s, testEnv); !r.Blocking() {
		t.Error("empty budget currency (USD) against CNY prices not refused")
	}
}
