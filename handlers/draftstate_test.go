package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/web/webtest"
)

// Every htmx answer to a change carries the draft banner out of band,
// whichever handler answered: it appears after an inline edit once the
// draft differs, and goes when a change brings the draft back to live.
func TestDraftBannerRefreshedOutOfBandAfterEveryChange(t *testing.T) {
	env := webtest.New(t)
	lmSeedProviders(t, env)
	snap := lmSeedModel(t, env, "chat", 100)
	dep := snap.LogicModels[0].Deployments[0]
	if _, err := env.Store.Publish(t.Context(), store.PublishInput{Author: "t", Message: "v1", Check: func(config.Snapshot) config.Result { return config.Result{} }}); err != nil {
		t.Fatal(err)
	}
	admin := env.Login(t, "root", store.RoleAdmin)
	admin.HTMX = true
	banner := func(what string, res *http.Response, body string) (oob, differs bool) {
		t.Helper()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", what, res.StatusCode)
		}
		return strings.Count(body, ` id="draft-state"`) == 1 && strings.Contains(body, `<div id="draft-state" hx-swap-oob="true"`),
			strings.Contains(body, `data-testid="draft-banner"`)
	}

	// An inline weight change (the logic-model panel answers) makes the
	// draft differ from v1: the banner says so.
	res, _, body := admin.PostFormRaw("/deployments/"+itoa(dep.ID)+"/weight", url.Values{"weight": {"90"}})
	if oob, differs := banner("weight 90", res, body); !oob || !differs {
		t.Fatalf("weight change: banner out of band %v, says the draft differs %v\n%s", oob, differs, body)
	}
	// Back to 100: the draft is live again and the banner goes.
	res, _, body = admin.PostFormRaw("/deployments/"+itoa(dep.ID)+"/weight", url.Values{"weight": {"100"}})
	if oob, differs := banner("weight 100", res, body); !oob || differs {
		t.Fatalf("weight back: banner out of band %v, says the draft differs %v", oob, differs)
	}
	// A key added to a provider (another handler, another fragment).
	res, _, body = admin.PostFormRaw("/providers/"+itoa(snap.Providers[0].ID)+"/keys", url.Values{"secret": {"sk-added-key-000000001"}, "label": {"new"}})
	if oob, differs := banner("key added", res, body); !oob || !differs {
		t.Fatalf("key added: banner out of band %v, says the draft differs %v\n%s", oob, differs, body)
	}
	if strings.Contains(body, "sk-added-key-000000001") {
		t.Fatal("the key's secret is in the answer")
	}

	// A GET (the Health board's refresh, a filter) carries none.
	_, _, body = admin.GetRaw("/health")
	if strings.Contains(body, `<div id="draft-state" hx-swap-oob="true"`) {
		t.Fatal("an htmx GET carries the draft banner")
	}
	// A plain form post is answered with a redirect: the next page draws it.
	admin.HTMX = false
	res, _ = admin.NoRedirects().PostForm("/deployments/"+itoa(dep.ID)+"/weight", url.Values{"weight": {"80"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("plain weight change: %d", res.StatusCode)
	}
}
