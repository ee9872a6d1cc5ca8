package calllog

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSearchRefusesInputPostgresCannotRead: text PostgreSQL cannot hold
// (NUL, invalid UTF-8), absurd lengths and times outside its range are
// ErrInvalidFilter before any query runs, never a database error.
func TestSearchRefusesInputPostgresCannotRead(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	cursor := func(raw string) string { return base64.RawURLEncoding.EncodeToString([]byte(raw)) }
	for name, f := range map[string]Filter{
		"NUL in caller":          {Caller: "app\x00"},
		"invalid UTF-8 provider": {Provider: "\xff\xfe"},
		"newline in tier":        {Tier: "fast\n"},
		"huge logic model":       {LogicModel: strings.Repeat("m", MaxTextLen+1)},
		"NUL in request id":      {RequestID: "\x00"},
		"from before year 1":     {From: time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC)},
		"to after year 9999":     {To: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		"cursor far future":      {Cursor: cursor(strconv.FormatInt(1<<62, 10) + ":x")},
		"cursor far past":        {Cursor: cursor("-" + strconv.FormatInt(1<<62, 10) + ":x")},
		"cursor NUL id":          {Cursor: cursor("1700000000000000:\x00")},
		"cursor huge":            {Cursor: strings.Repeat("A", 10_000)},
		"NUL in caller part":     {CallerPart: "a\x00"},
		"invalid UTF-8 model":    {LogicModelPart: "\xc3"},
		"tab in request id part": {RequestIDPart: "abcd\t"},
		"huge key":               {Key: strings.Repeat("k", MaxTextLen+1)},
		"negative deployment":    {Deployment: -1},
		"bad cursor, no name":    {CallerPart: "nobody-has-this-name", Cursor: "!!"},
	} {
		if _, err := Search(ctx, db, f); !errors.Is(err, ErrInvalidFilter) {
			t.Errorf("%s: err = %v, want ErrInvalidFilter", name, err)
		}
	}
	// Limits are inclusive: these run (and find nothing).
	for name, f := range map[string]Filter{
		"longest caller": {Caller: strings.Repeat("c", MaxTextLen)},
		"year 1 to 9999": {From: MinTime, To: MaxTime},
		"unicode caller": {Caller: "café ☕"},
		"unicode part":   {CallerPart: "é ☕", LogicModelPart: "%_\\", RequestIDPart: "…☕☕☕☕"},
	} {
		if _, err := Search(ctx, db, f); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, id := range []string{"\x00", "bad\xff", strings.Repeat("r", 1000)} {
		if _, err := Get(ctx, db, id, time.Time{}); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%.20q): %v, want ErrNotFound", id, err)
		}
	}
	if _, err := Get(ctx, db, "0190b5a0-0000-7000-8000-000000000000", time.UnixMicro(1<<62)); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get with an out-of-range at: %v, want ErrNotFound", err)
	}
}
