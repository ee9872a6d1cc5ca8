package live

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"switchyard/routing/config"
)

// fakeSource is a PostgreSQL that can be down, with a version that does
// not load.
type fakeSource struct {
	down    bool
	version int64
}

var errRefused = errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")

func (f *fakeSource) err() error {
	if f.down {
		return errRefused
	}
	return nil
}
func (f *fakeSource) LiveSnapshot(context.Context) (int64, []byte, error) {
	return f.version, []byte("not a snapshot"), f.err()
}
func (f *fakeSource) LatestVersionNumber(context.Context) (int64, error) { return f.version, f.err() }
func (f *fakeSource) ProviderKeySecrets(context.Context, []int64) (map[int64]string, error) {
	return nil, f.err()
}
func (f *fakeSource) ProviderHeaderSecrets(context.Context, []int64) (map[int64]config.HeaderSecret, error) {
	return nil, f.err()
}
func (f *fakeSource) LiveCallerKeys(context.Context) (config.LiveKeys, error) {
	return nil, f.err()
}
func (f *fakeSource) CallerKeysState(context.Context) (string, error)    { return "0/0/0", f.err() }
func (f *fakeSource) ConfigEpoch(context.Context) (int64, error)         { return 3, f.err() }
func (f *fakeSource) Listen(context.Context, *slog.Logger) <-chan Notice { return nil }

// A check that reaches PostgreSQL again clears "cannot check the live
// version"; a version that does not load stays reported across an outage
// until a newer one loads.
func TestReloadClearsTheOutageErrorWhenPostgresAnswers(t *testing.T) {
	ctx := context.Background()
	src := &fakeSource{}
	l := &Loader{Source: src, Holder: &Holder{}, Log: slog.New(slog.DiscardHandler)}
	l.Reload(ctx, true)
	if e := l.LastError(); e != "" {
		t.Fatalf("healthy: %q", e)
	}
	src.down = true
	l.Reload(ctx, false)
	if e := l.LastError(); !strings.Contains(e, "cannot check the live version") {
		t.Fatalf("down: %q", e)
	}
	src.down = false
	l.Reload(ctx, false)
	if e := l.LastError(); e != "" {
		t.Fatalf("PostgreSQL answers again, but the error stays: %q", e)
	}

	src.version = 1 // does not load
	l.Reload(ctx, false)
	refused := l.LastError()
	if !strings.Contains(refused, "version 1 refused") {
		t.Fatalf("a version that does not load: %q", refused)
	}
	src.down = true
	l.Reload(ctx, false)
	src.down = false
	l.Reload(ctx, false)
	if e := l.LastError(); e != refused {
		t.Fatalf("after an outage the refusal should be reported again: %q", e)
	}
}
