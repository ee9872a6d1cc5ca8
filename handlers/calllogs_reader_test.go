package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"switchyard/handlers"
	"switchyard/store"
	"switchyard/store/calllog"
	"switchyard/web/webtest"
)

// searchSpy is the call-log reads with a Search that records the filter it
// was given and answers what the test sets; the other reads reach the real
// database.
type searchSpy struct {
	handlers.CallLogReader
	mu      sync.Mutex
	filters []calllog.Filter
	err     error
}

func (s *searchSpy) Search(_ context.Context, f calllog.Filter) (calllog.Page, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.filters = append(s.filters, f)
	return calllog.Page{}, s.err
}

func (s *searchSpy) seen() []calllog.Filter {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]calllog.Filter(nil), s.filters...)
}

// TestCallLogSearchHandsTheParsedFilterToTheReader: the search page reads
// the form into the filter the call-log reader runs (window pinned to the
// anchor, exact status, HTTP status and deployment); a form that makes no
// sense never reaches the reader; a filter the reader refuses is a 400 with
// its reason shown; a failing reader is a server error on the page and on
// the CSV export, never an empty result that looks like "no calls".
func TestCallLogSearchHandsTheParsedFilterToTheReader(t *testing.T) {
	t.Parallel()
	spy := &searchSpy{}
	env := webtest.New(t, func(h *handlers.Handler) {
		spy.CallLogReader = h.CallLogs
		h.CallLogs = spy
	})
	viewer := env.Login(t, "watcher", store.RoleViewer)

	const anchor = 1700000000
	res, _ := viewer.Get(fmt.Sprintf("/call-logs?range=1h&anchor=%d&status=upstream_error&http_status=502&deployment=7", anchor))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("search: status %d, want 200", res.StatusCode)
	}
	got := spy.seen()
	if len(got) != 1 {
		t.Fatalf("the reader ran %d searches, want 1", len(got))
	}
	f, end := got[0], time.Unix(anchor, 0)
	if !f.To.Equal(end) || !f.From.Equal(end.Add(-time.Hour)) {
		t.Errorf("window %v – %v, want the hour before %v", f.From, f.To, end)
	}
	if f.Status != "upstream_error" || f.HTTPStatus != 502 || f.Deployment != 7 {
		t.Errorf("filter status %q, HTTP status %d, deployment %d; want upstream_error, 502, 7", f.Status, f.HTTPStatus, f.Deployment)
	}

	if res, _ := viewer.Get("/call-logs?status=bogus"); res.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("unknown status: %d, want 422", res.StatusCode)
	}
	if n := len(spy.seen()); n != 1 {
		t.Errorf("a filter that makes no sense reached the reader (%d searches)", n)
	}

	spy.err = &calllog.FilterError{Reason: "cursor is from another search"}
	res, doc := viewer.Get("/call-logs?range=1h")
	if res.StatusCode != http.StatusBadRequest {
		t.Errorf("refused filter: %d, want 400", res.StatusCode)
	}
	if msg := webtest.TestID(doc, "calllog-error").Text(); !strings.Contains(msg, "cursor is from another search") {
		t.Errorf("refused filter's message %q, want the reader's reason", msg)
	}

	spy.err = errors.New("calllog: search: connection reset by peer")
	if res, _ := viewer.Get("/call-logs?range=1h"); res.StatusCode != http.StatusInternalServerError {
		t.Errorf("failing reader, page: %d, want 500", res.StatusCode)
	}
	if res, _ := viewer.Get("/call-logs/export.csv?range=1h"); res.StatusCode != http.StatusInternalServerError {
		t.Errorf("failing reader, export: %d, want 500", res.StatusCode)
	}
}
