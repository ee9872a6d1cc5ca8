package handlers_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"switchyard/handlers"
	"switchyard/store"
	"switchyard/store/rows"
	"switchyard/web/webtest"
)

// racingPublish is the versions area's storage with a publish that fails
// as the store would when another operator's edit lands between the
// dry-run and the publish's lock (ErrDraftChanged), or when PostgreSQL
// drops the connection mid-publish: both are hard to time against a real
// database. Everything else reaches the real store.
type racingPublish struct {
	handlers.VersionStore
	err   error
	calls atomic.Int32
}

func (r *racingPublish) Publish(context.Context, rows.PublishInput) (rows.PublishOutcome, error) {
	r.calls.Add(1)
	return rows.PublishOutcome{}, r.err
}

// TestPublishRefusedWhenTheDraftChangesMeanwhile: a publish the store
// refuses because the draft changed re-renders the dry-run with the reason
// (422) in the console and answers 409 draft_changed in the admin API; a
// publish that fails for another reason is a server error, never reported
// as published.
func TestPublishRefusedWhenTheDraftChangesMeanwhile(t *testing.T) {
	t.Parallel()
	fake := &racingPublish{}
	env := webtest.New(t, func(h *handlers.Handler) {
		fake.VersionStore = h.Versions
		h.Versions = fake
	})
	seedDraft(t, env.Store)
	admin := env.Login(t, "ops", store.RoleAdmin)
	api := newAPI(t, env, store.RoleAdmin)

	fake.err = fmt.Errorf("store: publish: %w", rows.ErrDraftChanged)
	res, doc := admin.PostForm("/publish", url.Values{"message": {"first"}, "revision": {"1"}})
	if res.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("console publish: status %d, want 422", res.StatusCode)
	}
	if msg := webtest.TestID(doc, "publish-error").Text(); !strings.Contains(msg, rows.ErrDraftChanged.Error()) {
		t.Fatalf("publish error banner: %q", msg)
	}
	code, body := api.do("POST", "/publish", []byte(`{"message":"first"}`))
	var got struct {
		Error struct{ Code string } `json:"error"`
	}
	if err := json.Unmarshal(body, &got); code != http.StatusConflict || err != nil || got.Error.Code != "draft_changed" {
		t.Fatalf("API publish: %d %s, want 409 draft_changed", code, body)
	}

	fake.err = errors.New("store: publish: connection reset by peer")
	res, doc = admin.PostForm("/publish", url.Values{"message": {"second"}})
	if res.StatusCode != http.StatusInternalServerError {
		t.Fatalf("console publish on a failing store: status %d, want 500", res.StatusCode)
	}
	if strings.Contains(doc.Text(), "Published version") {
		t.Fatal("a failed publish was reported as published")
	}
	if code, body := api.do("POST", "/publish", []byte(`{"message":"second"}`)); code != http.StatusInternalServerError {
		t.Fatalf("API publish on a failing store: %d %s, want 500", code, body)
	}
	if n := fake.calls.Load(); n != 4 {
		t.Fatalf("the fake publish ran %d times, want 4", n)
	}
	// Nothing reached the real versions table.
	if vs, err := env.Store.Versions(t.Context(), 10); err != nil || len(vs) != 0 {
		t.Fatalf("versions: %v %v, want none", vs, err)
	}
}
