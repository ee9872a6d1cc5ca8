package web

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// A handler that panics is answered 500 and its panic logged with the
// route, on a route wrapped once (recovering) and in a group (recover);
// the connection-abort panic is left to net/http.
func TestRecovering(t *testing.T) {
	var logged bytes.Buffer
	s := &Server{log: slog.New(slog.NewTextHandler(&logged, nil))}
	e := echo.New()
	boom := func(echo.Context) error { panic("boom") }
	e.GET("/route", s.recovering(boom))
	e.Group("/group", s.recover).GET("/x", boom)
	e.GET("/abort", s.recovering(func(echo.Context) error { panic(http.ErrAbortHandler) }))
	for _, path := range []string{"/route", "/group/x"} {
		logged.Reset()
		w := httptest.NewRecorder()
		e.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		if w.Code != http.StatusInternalServerError {
			t.Errorf("%s: status %d, want 500", path, w.Code)
		}
		if l := logged.String(); !strings.Contains(l, "panic recovered") || !strings.Contains(l, "boom") || !strings.Contains(l, path) {
			t.Errorf("%s: log %q", path, l)
		}
	}
	defer func() {
		if r := recover(); r != http.ErrAbortHandler {
			t.Errorf("abort panic = %v, want http.ErrAbortHandler passed on", r)
		}
	}()
	e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/abort", nil))
}
