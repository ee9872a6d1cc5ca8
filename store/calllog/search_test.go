package calllog

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"switchyard/routing/record"
)

func TestSearchFiltersAndKeysetPagination(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	base := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	if err := EnsurePartitions(ctx, db, base.AddDate(0, 0, -1), 2); err != nil {
		t.Fatal(err)
	}

	// 90 rows on only 4 distinct timestamps (one of them across midnight in
	// the previous partition), so pagination must break ties by request id.
	var recs []Record
	stamps := []time.Time{base.Add(-13 * time.Hour), base, base.Add(time.Second), base.Add(time.Hour)}
	for i := range 90 {
		r := sampleRecord(stamps[i%4], []string{"alpha", "beta", "gamma"}[i%3], i)
		r.Endpoint = []string{"chat_completions", "messages", ""}[i%3] // "": a row from before front doors
		switch i % 7 {
		case 0:
			r.DroppedFields = []string{"cache_control"}
		case 1:
			r.DroppedFields = []string{"metadata.user_id", "cache_control"}
		case 2:
			r.DroppedFields = []string{"cache_control_x"} // not a match for cache_control
		}
		switch {
		case i%10 == 0:
			r.Status, r.ErrorClass, r.LogicModel, r.Provider, r.HTTPStatus = StatusRejected, "rate_limited", "", "", 429
		case i%10 == 1:
			r.Status, r.ErrorClass, r.HTTPStatus = StatusUpstreamError, "server", 502
		case i%10 == 2:
			// A 503 we answered ourselves: no class, only the code.
			r.Status, r.ErrorCode, r.LogicModel, r.Provider, r.HTTPStatus = StatusRejected, "no_available_model", "", "", 503
		case i%10 == 3:
			// A 401 with a revoked key: only its fingerprint.
			r.Status, r.ErrorClass, r.ErrorCode, r.HTTPStatus = StatusRejected, "auth", "invalid_api_key", 401
			r.Caller, r.LogicModel, r.Provider = "", "", ""
			r.PresentedKey = []string{"sy-Revokd…a1b2c3", "…0badf00d"}[i%2]
		}
		recs = append(recs, r)
	}
	for i := range recs {
		if err := normalize(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := insertBatch(ctx, db, recs); err != nil {
		t.Fatal(err)
	}
	newestFirst := func(a, b Record) int {
		if c := b.At.Compare(a.At); c != 0 {
			return c
		}
		return cmp.Compare(b.RequestID, a.RequestID)
	}

	tests := []struct {
		name   string
		filter Filter
		keep   func(Record) bool
	}{
		{"all", Filter{}, func(Record) bool { return true }},
		{"time range", Filter{From: base, To: base.Add(time.Hour)},
			func(r Record) bool { return !r.At.Before(base) && r.At.Before(base.Add(time.Hour)) }},
		{"caller", Filter{Caller: "beta"}, func(r Record) bool { return r.Caller == "beta" }},
		{"tier", Filter{Tier: "deep"}, func(r Record) bool { return r.Tier == "deep" }},
		{"logic model", Filter{LogicModel: "gpt-4.1"}, func(r Record) bool { return r.LogicModel == "gpt-4.1" }},
		{"provider", Filter{Provider: "dashscope"}, func(r Record) bool { return r.Provider == "dashscope" }},
		{"status rejected", Filter{Status: string(StatusRejected)}, func(r Record) bool { return r.Status == StatusRejected }},
		{"error class", Filter{ErrorClass: "server"}, func(r Record) bool { return r.ErrorClass == "server" }},
		{"http status 503", Filter{HTTPStatus: 503}, func(r Record) bool { return r.HTTPStatus == 503 }},
		{"http status 200", Filter{HTTPStatus: 200}, func(r Record) bool { return r.HTTPStatus == 200 }},
		{"error code", Filter{ErrorCode: "no_available_model"}, func(r Record) bool { return r.ErrorCode == "no_available_model" }},
		{"presented key", Filter{PresentedKey: "sy-Revokd…a1b2c3"}, func(r Record) bool { return r.PresentedKey == "sy-Revokd…a1b2c3" }},
		{"presented key and status", Filter{PresentedKey: "…0badf00d", HTTPStatus: 401},
			func(r Record) bool { return r.PresentedKey == "…0badf00d" && r.HTTPStatus == 401 }},
		{"combined", Filter{Caller: "alpha", Status: string(StatusOK), From: base},
			func(r Record) bool { return r.Caller == "alpha" && r.Status == StatusOK && !r.At.Before(base) }},
		{"request id", Filter{RequestID: recs[17].RequestID}, func(r Record) bool { return r.RequestID == recs[17].RequestID }},
		{"front door", Filter{Endpoint: "messages"}, func(r Record) bool { return r.Endpoint == "messages" }},
		{"dropped field", Filter{DroppedField: "cache_control"}, func(r Record) bool { return slices.Contains(r.DroppedFields, "cache_control") }},
		{"dropped field and caller", Filter{DroppedField: "cache_control", Caller: "gamma"},
			func(r Record) bool { return slices.Contains(r.DroppedFields, "cache_control") && r.Caller == "gamma" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want []string
			sorted := slices.Clone(recs)
			slices.SortFunc(sorted, newestFirst)
			for _, r := range sorted {
				if tt.keep(r) {
					want = append(want, r.RequestID)
				}
			}
			for _, limit := range []int{7, 1000} {
				f := tt.filter
				f.Limit = limit
				var got []string
				for pages := 0; ; pages++ {
					if pages > 100 {
						t.Fatal("pagination does not end")
					}
					p, err := Search(ctx, db, f)
					if err != nil {
						t.Fatal(err)
					}
					if len(p.Rows) > limit {
						t.Fatalf("page of %d rows, limit %d", len(p.Rows), limit)
					}
					for _, r := range p.Rows {
						got = append(got, r.RequestID)
					}
					if p.Next == "" {
						break
					}
					f.Cursor = p.Next
				}
				if !slices.Equal(got, want) {
					t.Errorf("limit %d: got %d ids, want %d (order or content differs)", limit, len(got), len(want))
				}
			}
		})
	}

	if _, err := Search(ctx, db, Filter{Cursor: "not a cursor!"}); !errors.Is(err, ErrInvalidFilter) {
		t.Errorf("bad cursor: err = %v, want ErrInvalidFilter", err)
	}
	if _, err := Search(ctx, db, Filter{Status: "fine"}); !errors.Is(err, ErrInvalidFilter) {
		t.Errorf("bad status: err = %v, want ErrInvalidFilter", err)
	}
	for _, code := range []int{-1, 99, 600} {
		if _, err := Search(ctx, db, Filter{HTTPStatus: code}); !errors.Is(err, ErrInvalidFilter) {
			t.Errorf("HTTP status %d: err = %v, want ErrInvalidFilter", code, err)
		}
	}
	if _, err := Search(ctx, db, Filter{ErrorCode: "bad\x00code"}); !errors.Is(err, ErrInvalidFilter) {
		t.Errorf("error code with a NUL: err = %v, want ErrInvalidFilter", err)
	}
	p, err := Search(ctx, db, Filter{Status: string(StatusRejected), Limit: 1})
	if err != nil || len(p.Rows) != 1 || p.Rows[0].LogicModel != "" || p.Rows[0].Provider != "" {
		t.Errorf("rejected row = %+v, %v; want empty model fields", p.Rows, err)
	}
}

func TestGet(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	now := time.Now()
	if err := EnsurePartitions(ctx, db, now.AddDate(0, 0, -3), 4); err != nil {
		t.Fatal(err)
	}
	v7 := sampleRecord(now.Add(-time.Minute), "getter", 1)
	custom := sampleRecord(now.AddDate(0, 0, -2), "getter", 2)
	custom.RequestID = "caller-supplied-id-1"
	// A v7 id whose row time is far from its embedded time still resolves.
	skewed := sampleRecord(now.AddDate(0, 0, -3), "getter", 3)
	recs := []Record{v7, custom, skewed}
	for i := range recs {
		if err := normalize(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	skewed.RequestID = record.NewRequestID()
	recs[2].RequestID = skewed.RequestID
	if _, err := insertBatch(ctx, db, recs); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		id   string
		at   time.Time
	}{
		{"uuidv7", recs[0].RequestID, time.Time{}},
		{"uuidv7 with at", recs[0].RequestID, recs[0].At},
		{"caller-supplied id", recs[1].RequestID, time.Time{}},
		{"skewed uuidv7", recs[2].RequestID, time.Time{}},
		{"wrong at hint", recs[1].RequestID, now},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Get(ctx, db, tc.id, tc.at)
			if err != nil || r.RequestID != tc.id {
				t.Errorf("Get = %s, %v", r.RequestID, err)
			}
		})
	}
	if _, err := Get(ctx, db, record.NewRequestID(), time.Time{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown id: err = %v, want ErrNotFound", err)
	}
}
