package components

import "testing"

func TestMoney(t *testing.T) {
	for _, c := range []struct {
		micros int64
		cur    string
		want   string
	}{
		{2_500_000, "USD", "2.5 USD"},
		{125, "CNY", "0.000125 CNY"},
		{3_000_000, "USD", "3 USD"},
		{0, "USD", "0 USD"},
		{1_234_567, "", "1.234567"},
		{-50_000, "EUR", "-0.05 EUR"},
	} {
		if got := Money(c.micros, c.cur); got != c.want {
			t.Errorf("Money(%d, %q) = %q, want %q", c.micros, c.cur, got, c.want)
		}
	}
	if got := MoneyOrUnknown(nil, "USD"); got != "unknown" {
		t.Errorf("nil cost = %q", got)
	}
	zero := int64(0)
	if got := MoneyOrUnknown(&zero, "USD"); got != "0 USD" {
		t.Errorf("zero cost = %q", got)
	}
	if got := MoneyByCurrency(map[string]int64{"USD": 250_000, "CNY": 1_500_000}); got != "1.5 CNY + 0.25 USD" {
		t.Errorf("by currency = %q", got)
	}
	if got := MoneyByCurrency(nil); got != "—" {
		t.Errorf("none = %q", got)
	}
	if MoneyInput(0, true) != "" || MoneyInput(0, false) != "0" || MoneyInput(100_000, true) != "0.1" {
		t.Error("MoneyInput")
	}
}
