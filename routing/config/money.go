package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Micros is an amount of money in millionths of a currency unit: 2.5 USD is
// Micros(2_500_000). Money is never a float: amounts are read from and
// written as exact decimal text ("2.5"), never through float64.
type Micros int64

// Unit is one whole currency unit.
const Unit Micros = 1_000_000

// MaxMicros bounds every amount the parser accepts (one trillion units), so
// sums of many amounts stay far from int64 overflow.
const MaxMicros Micros = 1_000_000_000_000 * Unit

// ErrMoney wraps every error of ParseMicros; ErrMoneyPrecision and
// ErrMoneyRange wrap it for the two errors a form explains differently
// from "not a number".
var (
	ErrMoney          = errors.New("invalid amount")
	ErrMoneyPrecision = fmt.Errorf("%w: more than 6 decimal places", ErrMoney)
	ErrMoneyRange     = fmt.Errorf("%w: too large", ErrMoney)
)

// ParseMicros reads an exact decimal amount: "2", "2.5", "0.000001", "-1.25",
// and the exponent forms older float snapshots were written in ("1e-06",
// "2.5E+06"). More than six decimal places, or any other text, is an error;
// nothing is rounded.
func ParseMicros(s string) (Micros, error) {
	orig := s
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("%w: empty", ErrMoney)
	}
	neg := false
	switch s[0] {
	case '-':
		neg, s = true, s[1:]
	case '+':
		s = s[1:]
	}
	exp := 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || e > 30 || e < -30 {
			return 0, fmt.Errorf("%w: %q is not a decimal number", ErrMoney, orig)
		}
		exp, s = e, s[:i]
	}
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" || !digits(whole) || !digits(frac) {
		return 0, fmt.Errorf("%w: %q is not a decimal number", ErrMoney, orig)
	}
	// The digits as an integer d and a scale: value = d × 10^(exp-len(frac)).
	ds := strings.TrimLeft(whole+frac, "0")
	scale := exp - len(frac) + 6 // power of ten turning d into micros
	for scale < 0 && strings.HasSuffix(ds, "0") {
		ds, scale = ds[:len(ds)-1], scale+1
	}
	if ds == "" {
		return 0, nil
	}
	if scale < 0 {
		return 0, fmt.Errorf("%w: %q", ErrMoneyPrecision, orig)
	}
	if len(ds)+scale > 19 {
		return 0, fmt.Errorf("%w: %q", ErrMoneyRange, orig)
	}
	v, err := strconv.ParseInt(ds+strings.Repeat("0", scale), 10, 64)
	if err != nil || Micros(v) > MaxMicros {
		return 0, fmt.Errorf("%w: %q", ErrMoneyRange, orig)
	}
	if neg {
		v = -v
	}
	return Micros(v), nil
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// String is the exact decimal text of m with no trailing zeros: "2.5", "3",
// "0.000001", "-1.25".
func (m Micros) String() string { return string(m.appendText(make([]byte, 0, 24))) }

// appendText appends m.String() to b.
func (m Micros) appendText(b []byte) []byte {
	u := uint64(m)
	if m < 0 {
		b, u = append(b, '-'), -u
	}
	whole, frac := u/1_000_000, u%1_000_000
	b = strconv.AppendUint(b, whole, 10)
	if frac == 0 {
		return b
	}
	b = append(b, '.')
	for d := uint64(100_000); frac > 0; d /= 10 {
		b = append(b, byte('0'+frac/d))
		frac %= d
	}
	return b
}

// Fixed is m with at least min decimal places (more when m needs them), for
// display: Fixed(2) of 2.5 is "2.50", of 0.000123 is "0.000123".
func (m Micros) Fixed(min int) string {
	s := m.String()
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) < min {
		frac += strings.Repeat("0", min-len(frac))
	}
	if frac == "" {
		return whole
	}
	return whole + "." + frac
}

// MarshalYAML writes m as a plain decimal scalar (2.5, never "2.5" or 2.5e+06).
func (m Micros) MarshalYAML() (any, error) {
	return &yaml.Node{Kind: yaml.ScalarNode, Value: m.String()}, nil
}

// UnmarshalYAML reads a decimal scalar, quoted or not; null is 0.
func (m *Micros) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: %w: want a decimal number", n.Line, ErrMoney)
	}
	if n.ShortTag() == "!!null" {
		*m = 0
		return nil
	}
	v, err := ParseMicros(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*m = v
	return nil
}

// MarshalJSON writes m as a JSON number in exact decimal form (2.5).
func (m Micros) MarshalJSON() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalJSON reads a JSON number or a string holding a decimal; null
// leaves m unchanged, as for any JSON field.
func (m *Micros) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		b = []byte(s)
	}
	v, err := ParseMicros(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// MarshalText and UnmarshalText make Micros usable as a form or query value.
func (m Micros) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads a decimal.
func (m *Micros) UnmarshalText(b []byte) error {
	v, err := ParseMicros(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// CostMicros is the cost in micro-units of Currency of one call, with prices
// per one million tokens: cached prompt tokens at Cached, the rest of the
// prompt at Input and the completion at Output. cached is clamped to
// [0, prompt] and negative counts count as 0.
//
// Rounding: the exact cost is Σ tokens × price / 1,000,000 micros; it is
// rounded half up to a whole micro-unit, once, on the sum (so a call priced
// at 0.4 µ + 0.4 µ costs 1 µ, not 0). The arithmetic is 128-bit integer
// arithmetic, so nothing is lost for any token count; a cost beyond int64
// saturates at math.MaxInt64.
func (p Prices) CostMicros(prompt, completion, cached int64) int64 {
	prompt, completion, cached = max(prompt, 0), max(completion, 0), max(cached, 0)
	cached = min(cached, prompt)
	var hi, lo uint64
	add := func(tokens int64, price Micros) {
		if tokens == 0 || price <= 0 {
			return
		}
		h, l := bits.Mul64(uint64(tokens), uint64(price))
		var c uint64
		lo, c = bits.Add64(lo, l, 0)
		hi, _ = bits.Add64(hi, h, c)
	}
	add(prompt-cached, p.InputMicros)
	add(cached, p.CachedMicros)
	add(completion, p.OutputMicros)
	// + 500_000 rounds half up before the division.
	var c uint64
	lo, c = bits.Add64(lo, 500_000, 0)
	hi += c
	if hi >= 1_000_000 {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, 1_000_000)
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

// Bounds the console and API accept.
const (
	MaxPriceMicros  Micros = 1_000_000 * Unit     // per 1M tokens
	MaxBudgetMicros Micros = 1_000_000_000 * Unit // per month
)
