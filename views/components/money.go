package components

import (
	"slices"
	"strings"

	"switchyard/routing/config"
)

// Money is the one way the console shows an amount: micro-units of a
// currency as an exact decimal with its code, "2.5 USD", "0.000125 CNY",
// "3 USD"; nothing is rounded. An empty currency shows the number alone.
func Money(micros int64, currency string) string {
	s := config.Micros(micros).String()
	if currency == "" {
		return s
	}
	return s + " " + currency
}

// MoneyOrUnknown is Money of a cost that may be unknown (nil: not priced),
// which is not the same as 0.
func MoneyOrUnknown(micros *int64, currency string) string {
	if micros == nil {
		return "unknown"
	}
	return Money(*micros, currency)
}

// MoneyByCurrency shows amounts in several currencies, which are never added
// up: "1.5 CNY + 0.25 USD" in currency order, or "—" when there are none.
func MoneyByCurrency(m map[string]int64) string {
	if len(m) == 0 {
		return "—"
	}
	curs := make([]string, 0, len(m))
	for c := range m {
		curs = append(curs, c)
	}
	slices.Sort(curs)
	parts := make([]string, 0, len(curs))
	for _, c := range curs {
		parts = append(parts, Money(m[c], c))
	}
	return strings.Join(parts, " + ")
}

// MoneyInput is an amount as a form field's value: the exact decimal, empty
// for 0 when zeroIsBlank (a blank field means "none" or "unlimited").
func MoneyInput(micros int64, zeroIsBlank bool) string {
	if micros == 0 && zeroIsBlank {
		return ""
	}
	return config.Micros(micros).String()
}
