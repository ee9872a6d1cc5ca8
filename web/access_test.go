package web_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/labstack/echo/v4"

	"switchyard/handlers/access"
	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/web/webtest"
)

// consoleRoute reports whether an echo route is a console route behind
// requireUser (or the admin API behind requireToken).
func consoleRoute(r *echo.Route) (console, api bool) {
	p := r.Path
	switch {
	case strings.HasPrefix(p, "/admin/api/"):
		return false, true
	case p == "/*" || p == "" || strings.HasPrefix(p, "/v1") || strings.HasPrefix(p, "/static") ||
		strings.HasPrefix(p, "/manual") || strings.HasPrefix(p, "/auth/oidc/") || slices.Contains([]string{"/healthz", "/readyz", "/metrics", "/favicon.ico", "/login", "/logout"}, p):
		return false, false
	}
	return r.Method != echo.RouteNotFound, false
}

var param = regexp.MustCompile(`:[a-z_]+`)

// TestGuardFollowsTheRoleTable sends every console and admin-API route as
// every role and checks the guard refuses (403) exactly the routes whose
// action (access.ForRoute) the role lacks. Ids point at nothing, so an
// allowed request changes nothing and answers 404 or 422, never 403.
func TestGuardFollowsTheRoleTable(t *testing.T) {
	env := webtest.New(t)
	clients := map[string]*webtest.Client{}
	tokens := map[string]string{}
	for _, role := range access.Roles {
		clients[role] = env.Login(t, "u-"+role, role)
		tok, _, err := env.Store.CreateAdminToken(t.Context(), "t-"+role, role, "test")
		if err != nil {
			t.Fatal(err)
		}
		tokens[role] = tok
	}
	n := 0
	for _, r := range env.Echo.Routes() {
		console, api := consoleRoute(r)
		if !console && !api {
			continue
		}
		path := param.ReplaceAllString(r.Path, "999999")
		for _, role := range access.Roles {
			want := access.ForRoute(r.Method, r.Path)
			var code int
			if api {
				code = apiStatus(t, env, r.Method, path, tokens[role])
			} else {
				code = consoleStatus(t, clients[role], r.Method, path)
			}
			if refused, allowed := code == http.StatusForbidden, access.Allows(role, want); refused == allowed {
				t.Errorf("%s %s as %s: %d, but the table says %s is allowed: %v", r.Method, r.Path, role, code, want, allowed)
			}
			n++
		}
	}
	if n < 100 {
		t.Fatalf("only %d route × role checks: the route walk is broken", n)
	}
}

func consoleStatus(t *testing.T, c *webtest.Client, method, path string) int {
	t.Helper()
	if method == http.MethodGet {
		res, _ := c.NoRedirects().Get(path)
		return res.StatusCode
	}
	res, _ := c.NoRedirects().PostForm(path, url.Values{})
	return res.StatusCode
}

func apiStatus(t *testing.T, env *webtest.Env, method, path, token string) int {
	t.Helper()
	req, _ := http.NewRequest(method, env.Server.URL+path, strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestViewerIsToldBeforeTheWizard: a direct visit to the onboarding wizard
// says at once that the role cannot onboard.
func TestViewerIsToldBeforeTheWizard(t *testing.T) {
	env := webtest.New(t)
	viewer := env.Login(t, "watcher", store.RoleViewer)
	for _, p := range []string{"/onboarding", "/onboarding/templates/openai", "/providers/new"} {
		res, doc := viewer.Get(p)
		if res.StatusCode != http.StatusForbidden {
			t.Fatalf("viewer GET %s: %d", p, res.StatusCode)
		}
		if doc.Find("form").Length() != 0 || !strings.Contains(doc.Find("main").Text(), "The viewer role cannot") {
			t.Errorf("viewer GET %s: %q", p, doc.Find("main").Text())
		}
	}
}

// control is one thing a page offers: a link, a form or an htmx request.
type control struct{ method, path string }

// controls lists a page's controls (links to console pages, forms, htmx
// requests), without repeats.
func controls(doc *goquery.Document) []control {
	seen := map[control]bool{}
	add := func(method, href string) {
		u, err := url.Parse(href)
		if err != nil || u.Host != "" || !strings.HasPrefix(u.Path, "/") || strings.HasPrefix(u.Path, "/static/") {
			return
		}
		seen[control{strings.ToUpper(method), u.Path}] = true
	}
	doc.Find("a[href]").Each(func(_ int, s *goquery.Selection) { add("GET", s.AttrOr("href", "")) })
	doc.Find("form[action]").Each(func(_ int, s *goquery.Selection) {
		add(s.AttrOr("method", "GET"), s.AttrOr("action", ""))
	})
	doc.Find("[formaction]").Each(func(_ int, s *goquery.Selection) { add("POST", s.AttrOr("formaction", "")) })
	doc.Find("[hx-post]").Each(func(_ int, s *goquery.Selection) { add("POST", s.AttrOr("hx-post", "")) })
	doc.Find("[hx-get]").Each(func(_ int, s *goquery.Selection) { add("GET", s.AttrOr("hx-get", "")) })
	out := make([]control, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].method+out[i].path < out[j].method+out[j].path })
	return out
}

// action is what the guard would ask of a control's request.
func action(e *echo.Echo, c control) access.Action {
	ctx := e.NewContext(httptest.NewRequest(c.method, c.path, nil), httptest.NewRecorder())
	e.Router().Find(c.method, c.path, ctx)
	return access.ForRoute(c.method, ctx.Path())
}

// TestControlsFollowTheRoleTable opens every console page of a furnished
// configuration as every role: each link, form and htmx request a page
// renders is one the guard allows the role, and for every action the
// admin's page offers a control for, the page of each role allowed that
// action offers one too — a control is rendered exactly when its action is
// allowed. The admin's pages together offer every action but Read's
// neighbours that need a running data plane (SendTest, RunJobs).
func TestControlsFollowTheRoleTable(t *testing.T) {
	env := webtest.New(t)
	ids := furnish(t, env.Store)
	clients := map[string]*webtest.Client{}
	for _, role := range access.Roles {
		clients[role] = env.Login(t, "u-"+role, role)
	}
	offered := map[access.Action]bool{}
	for _, path := range consolePages(t, env.Echo, ids) {
		byRole := map[string]map[access.Action]bool{}
		for _, role := range access.Roles {
			res, doc := clients[role].Get(path)
			if res.StatusCode == http.StatusNotFound && strings.HasPrefix(path, "/call-logs/") {
				continue // no call log without a data plane
			}
			if res.StatusCode != http.StatusOK {
				if access.Allows(role, action(env.Echo, control{"GET", strings.SplitN(path, "?", 2)[0]})) {
					t.Errorf("%s as %s: %d", path, role, res.StatusCode)
				}
				continue
			}
			byRole[role] = map[access.Action]bool{}
			for _, ctl := range controls(doc) {
				a := action(env.Echo, ctl)
				if !access.Allows(role, a) {
					t.Errorf("%s as %s shows %s %s, which needs %s", path, role, ctl.method, ctl.path, a)
				}
				byRole[role][a] = true
				offered[a] = true
			}
		}
		for a := range byRole[config.RoleAdmin] {
			for _, role := range access.Roles {
				if got, ok := byRole[role]; ok && access.Allows(role, a) && !got[a] {
					t.Errorf("%s as %s offers no control for %s, which the role may do", path, role, a)
				}
			}
		}
	}
	for _, a := range []access.Action{access.Read, access.Onboard, access.EditConfig, access.CallerKeys, access.Publish, access.ManageUsers} {
		if !offered[a] {
			t.Errorf("no page rendered a control for %s: the walk misses pages", a)
		}
	}
}

// consolePages is one URL for every GET console page, ids filled in; a GET
// route without one fails the test, so a new page is walked too.
func consolePages(t *testing.T, e *echo.Echo, ids map[string]string) []string {
	pages := []string{
		"/", "/onboarding", "/onboarding/templates/openai",
		"/providers", "/providers/new", "/providers/{provider}/edit",
		"/logic-models", "/logic-models/new", "/logic-models/{model}/edit",
		"/logic-models/{model}/deployments/new", "/deployments/{deployment}/edit",
		"/route-groups", "/route-groups/new", "/route-groups/{group}/edit",
		"/tiers/{tier}", "/route-groups/{group}/aliases",
		"/callers", "/callers/new", "/callers/{caller}", "/callers/{caller}/edit",
		"/tenants", "/tenants/new", "/tenants/{tenant}/edit",
		"/dry-run", "/versions", "/versions/diff?from=1&to=draft", "/versions/1", "/versions/1/rollback", "/config/export", "/config/import",
		"/test-route", "/test-route?model=standard&caller=app", "/call-logs", "/call-logs/export.csv", "/call-logs/{request}", "/dashboard",
		"/usage", "/usage?caller=app", "/usage?tenant=acme",
		"/health", "/jobs", "/settings", "/settings/alerts", "/audit",
		"/account/password", // only a user who must change their password stays on it
	}
	covered := map[string]bool{}
	for i, p := range pages {
		for k, v := range ids {
			p = strings.ReplaceAll(p, "{"+k+"}", v)
		}
		pages[i] = p
		ctx := e.NewContext(httptest.NewRequest(http.MethodGet, p, nil), httptest.NewRecorder())
		e.Router().Find(http.MethodGet, strings.SplitN(p, "?", 2)[0], ctx)
		covered[ctx.Path()] = true
	}
	for _, r := range e.Routes() {
		if console, _ := consoleRoute(r); console && r.Method == http.MethodGet && !covered[r.Path] {
			t.Errorf("console page %s is not walked: add it to consolePages", r.Path)
		}
	}
	return pages
}

// furnish fills the draft with one of everything, publishes it twice and
// leaves the draft differing from live (so the publish banner shows).
func furnish(t *testing.T, st *store.Store) map[string]string {
	t.Helper()
	ctx := t.Context()
	ids := map[string]string{"request": "no-such-request"}
	must := func(id int64, err error) int64 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	itoa := func(v int64) string { return strconv.FormatInt(v, 10) }
	p := must(st.CreateProvider(ctx, config.Provider{Name: "vendor-a", Protocol: config.ProtocolOpenAI, BaseURL: "http://127.0.0.1:9/v1", Enabled: true, TimeoutMS: 30000}))
	if _, err := st.AddProviderKey(ctx, p, "primary", "sk-vendor-a-key-000001"); err != nil {
		t.Fatal(err)
	}
	ids["provider"] = itoa(p)
	m := must(st.CreateLogicModel(ctx, config.LogicModel{Code: "chat-main", Kind: config.KindChat}))
	ids["model"] = itoa(m)
	ids["deployment"] = itoa(must(st.CreateDeployment(ctx, m, config.Deployment{Provider: "vendor-a", UpstreamModel: "fake-a", Weight: 100, Enabled: true})))
	ids["tenant"] = itoa(must(st.CreateTenant(ctx, config.Tenant{Name: "acme"})))
	ids["group"] = itoa(must(st.CreateRouteGroup(ctx, config.RouteGroup{Name: "main"})))
	snap, _, err := st.Draft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range snap.RouteGroups {
		for _, tr := range g.Tiers {
			ids["tier"] = itoa(tr.ID)
			must(st.AddCandidate(ctx, tr.ID, config.Candidate{LogicModel: "chat-main", Weight: 100}))
		}
	}
	c := must(st.CreateCaller(ctx, config.Caller{Name: "app", RouteGroup: "main", PriorityClass: config.ClassInteractive, Enabled: true}))
	ids["caller"] = itoa(c)
	if _, _, err := st.CreateCallerKey(ctx, "app", "first", "test"); err != nil {
		t.Fatal(err)
	}
	dep := must(strconv.ParseInt(ids["deployment"], 10, 64))
	for i, msg := range []string{"first", "second"} {
		if _, err := st.Publish(ctx, store.PublishInput{Author: "seed", Message: msg, Check: func(config.Snapshot) config.Result { return config.Result{} }}); err != nil {
			t.Fatal(err)
		}
		if err := st.SetDeploymentWeight(ctx, dep, 90-10*i); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}
