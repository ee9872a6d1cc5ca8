package handlers_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/web/webtest"
)

// crudAPI is an admin-API client that checks every answer: the status is
// the one expected, never a 500, and no provider secret ever appears.
type crudAPI struct {
	*apiClient
	t *testing.T
}

func newCRUD(t *testing.T, env *webtest.Env) *crudAPI {
	return &crudAPI{apiClient: newAPI(t, env, store.RoleAdmin), t: t}
}

// call sends body (none when empty) and wants status; dst, if given,
// receives the decoded answer.
func (a *crudAPI) call(method, path, body string, want int, dst ...any) []byte {
	a.t.Helper()
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	code, out := a.do(method, path, b)
	if code >= 500 {
		a.t.Fatalf("%s %s: server error %d %s", method, path, code, out)
	}
	if bytes.Contains(out, []byte(secretInTests)) {
		a.t.Fatalf("%s %s: the provider secret is in the answer: %s", method, path, out)
	}
	if code != want {
		a.t.Fatalf("%s %s: got %d, want %d: %s", method, path, code, want, out)
	}
	for _, d := range dst {
		if err := json.Unmarshal(out, d); err != nil {
			a.t.Fatalf("%s %s: decode %s: %v", method, path, out, err)
		}
	}
	return out
}

type crudErr struct {
	Error struct {
		Message string            `json:"message"`
		Type    string            `json:"type"`
		Code    string            `json:"code"`
		Fields  map[string]string `json:"fields"`
	} `json:"error"`
}

// fails wants an error answer with status and code and returns it.
func (a *crudAPI) fails(method, path, body string, want int, code string) crudErr {
	a.t.Helper()
	var e crudErr
	a.call(method, path, body, want, &e)
	if e.Error.Code != code || e.Error.Message == "" {
		a.t.Fatalf("%s %s: error %+v, want code %q with a message", method, path, e.Error, code)
	}
	return e
}

func crudJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// crudRaw sends a request with full control over headers (token and
// Content-Type may be empty).
func crudRaw(t *testing.T, env *webtest.Env, method, path, token, ctype string, body []byte) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, env.Server.URL+"/admin/api"+path, bytes.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	return res.StatusCode, out
}

// crudSeed creates, through the API, a provider with a key, a logic model
// with one deployment, a route group whose tiers all use that model and a
// caller bound to the group.
type crudSeeded struct {
	provider config.Provider
	model    config.LogicModel
	group    config.RouteGroup
	caller   config.Caller
}

func crudSeed(t *testing.T, a *crudAPI) crudSeeded {
	t.Helper()
	var s crudSeeded
	a.call("POST", "/providers", `{"name":"openai","protocol":"openai","base_url":"https://api.openai.com/v1"}`, http.StatusCreated, &s.provider)
	a.call("POST", "/providers/"+itoa(s.provider.ID)+"/keys", `{"label":"main","secret":"`+secretInTests+`"}`, http.StatusCreated)
	a.call("POST", "/logic-models", `{"code":"small"}`, http.StatusCreated, &s.model)
	a.call("POST", "/logic-models/"+itoa(s.model.ID)+"/deployments", `{"provider":"openai","upstream_model":"gpt-4o-mini"}`, http.StatusCreated)
	a.call("GET", "/providers/"+itoa(s.provider.ID), "", http.StatusOK, &s.provider)
	a.call("GET", "/logic-models/"+itoa(s.model.ID), "", http.StatusOK, &s.model)
	a.call("POST", "/route-groups", `{"name":"default"}`, http.StatusCreated, &s.group)
	for _, tr := range s.group.Tiers {
		a.call("POST", "/tiers/"+itoa(tr.ID)+"/candidates", `{"logic_model":"small"}`, http.StatusCreated)
	}
	a.call("GET", "/route-groups/"+itoa(s.group.ID), "", http.StatusOK, &s.group)
	a.call("POST", "/callers", `{"name":"search","route_group":"default"}`, http.StatusCreated, &s.caller)
	return s
}

func TestAPICRUDProvidersAndKeys(t *testing.T) {
	env := webtest.New(t)
	a := newCRUD(t, env)

	var p config.Provider
	a.call("POST", "/providers", `{"name":"openai","protocol":"openai","base_url":"https://api.openai.com/v1","notes":"main account"}`, http.StatusCreated, &p)
	if p.ID == 0 || p.Name != "openai" || !p.Enabled || p.TimeoutMS != 60000 || p.Notes != "main account" {
		t.Fatalf("created provider %+v: want an id, enabled and the 60 s default timeout", p)
	}
	pid := itoa(p.ID)

	var k config.ProviderKey
	a.call("POST", "/providers/"+pid+"/keys", `{"label":"main","secret":"`+secretInTests+`"}`, http.StatusCreated, &k)
	if k.ID == 0 || k.Label != "main" || k.Status != config.KeyActive || !strings.HasSuffix(k.Fingerprint, secretInTests[len(secretInTests)-4:]) {
		t.Fatalf("added key %+v", k)
	}
	// The secret is write-only; the draft holds only the fingerprint.
	var list struct{ Providers []config.Provider }
	a.call("GET", "/providers", "", http.StatusOK, &list)
	if len(list.Providers) != 1 || len(list.Providers[0].Keys) != 1 || list.Providers[0].Keys[0] != k {
		t.Fatalf("list: %+v", list)
	}

	// PUT changes only the fields sent; a GET answer can be sent back as is.
	a.call("PUT", "/providers/"+pid, `{"base_url":"https://eu.api.openai.com/v1","timeout_ms":30000}`, http.StatusOK, &p)
	if p.BaseURL != "https://eu.api.openai.com/v1" || p.TimeoutMS != 30000 || !p.Enabled || p.Notes != "main account" || len(p.Keys) != 1 {
		t.Fatalf("updated provider %+v", p)
	}
	var got config.Provider
	a.call("GET", "/providers/"+pid, "", http.StatusOK, &got)
	p.Enabled = false
	a.call("PUT", "/providers/"+pid, crudJSON(p), http.StatusOK, &got)
	if got.Enabled || got.Name != "openai" {
		t.Fatalf("round-tripped provider %+v", got)
	}
	// Keys are not changed through the provider.
	e := a.fails("PUT", "/providers/"+pid, `{"keys":[]}`, http.StatusUnprocessableEntity, "validation_failed")
	if e.Error.Fields["keys"] == "" {
		t.Fatalf("keys change: %+v", e)
	}
	a.fails("PUT", "/providers/"+pid, `{"id":999}`, http.StatusUnprocessableEntity, "validation_failed")

	// Key status and removal.
	a.call("PUT", "/provider-keys/"+itoa(k.ID), `{"status":"disabled"}`, http.StatusOK, &k)
	if k.Status != config.KeyDisabled {
		t.Fatalf("disabled key: %+v", k)
	}
	e = a.fails("PUT", "/provider-keys/"+itoa(k.ID), `{"status":"cooling"}`, http.StatusUnprocessableEntity, "validation_failed")
	if e.Error.Fields["status"] == "" {
		t.Fatalf("bad status: %+v", e)
	}
	e = a.fails("POST", "/providers/"+pid+"/keys", `{"label":"short","secret":"abc"}`, http.StatusUnprocessableEntity, "validation_failed")
	if e.Error.Fields["secret"] == "" {
		t.Fatalf("short secret: %+v", e)
	}
	a.call("DELETE", "/provider-keys/"+itoa(k.ID), "", http.StatusNoContent)
	a.fails("DELETE", "/provider-keys/"+itoa(k.ID), "", http.StatusNotFound, "not_found")
	a.fails("PUT", "/provider-keys/"+itoa(k.ID), `{"status":"active"}`, http.StatusNotFound, "not_found")
	a.call("GET", "/providers/"+pid, "", http.StatusOK, &got)
	if len(got.Keys) != 0 {
		t.Fatalf("removed key still listed: %+v", got)
	}

	a.call("DELETE", "/providers/"+pid, "", http.StatusNoContent)
	a.fails("GET", "/providers/"+pid, "", http.StatusNotFound, "not_found")
	a.fails("DELETE", "/providers/"+pid, "", http.StatusNotFound, "not_found")

	// The secret is stored sealed, never in the clear.
	var n int
	if err := env.Store.DB().QueryRowContext(t.Context(), `SELECT count(*) FROM provider_keys WHERE position($1 in encode(secret,'escape')) > 0`, secretInTests).Scan(&n); err != nil || n != 0 {
		t.Fatalf("plaintext secret stored: %d %v", n, err)
	}
}

func TestAPICRUDTenants(t *testing.T) {
	env := webtest.New(t)
	a := newCRUD(t, env)

	var tn config.Tenant
	a.call("POST", "/tenants", `{"name":"retail","description":"shop"}`, http.StatusCreated, &tn)
	if tn.ID == 0 || tn.Name != "retail" || tn.Description != "shop" {
		t.Fatalf("created %+v", tn)
	}
	id := itoa(tn.ID)
	a.call("PUT", "/tenants/"+id, `{"description":"online shop"}`, http.StatusOK, &tn)
	if tn.Name != "retail" || tn.Description != "online shop" {
		t.Fatalf("updated %+v", tn)
	}
	var list struct{ Tenants []config.Tenant }
	a.call("GET", "/tenants", "", http.StatusOK, &list)
	if len(list.Tenants) != 1 || list.Tenants[0] != tn {
		t.Fatalf("list %+v", list)
	}
	e := a.fails("POST", "/tenants", `{"name":"retail"}`, http.StatusUnprocessableEntity, "validation_failed")
	if e.Error.Fields["name"] == "" {
		t.Fatalf("duplicate name: %+v", e)
	}

	// A tenant that owns a route group cannot be deleted.
	var g config.RouteGroup
	a.call("POST", "/route-groups", `{"name":"retail-pool","tenant":"retail"}`, http.StatusCreated, &g)
	if g.Tenant != "retail" || g.Fallback != config.FallbackNone {
		t.Fatalf("dedicated group %+v", g)
	}
	e = a.fails("DELETE", "/tenants/"+id, "", http.StatusConflict, "referenced")
	if !strings.Contains(e.Error.Message, "route group retail-pool") {
		t.Fatalf("referenced message: %q", e.Error.Message)
	}
	a.call("DELETE", "/route-groups/"+itoa(g.ID), "", http.StatusNoContent)
	a.call("DELETE", "/tenants/"+id, "", http.StatusNoContent)
	a.fails("GET", "/tenants/"+id, "", http.StatusNotFound, "not_found")
}

func TestAPICRUDLogicModelsAndDeployments(t *testing.T) {
	env := webtest.New(t)
	a := newCRUD(t, env)
	a.call("POST", "/providers", `{"name":"openai","protocol":"openai","base_url":"https://api.openai.com/v1"}`, http.StatusCreated)
	a.call("POST", "/providers", `{"name":"azure","protocol":"openai","base_url":"https://x.openai.azure.com/v1"}`, http.StatusCreated)

	var m config.LogicModel
	a.call("POST", "/logic-models", `{"code":"gpt-4o","description":"flagship"}`, http.StatusCreated, &m)
	if m.ID == 0 || m.Kind != config.KindChat || len(m.Deployments) != 0 {
		t.Fatalf("created %+v", m)
	}
	mid := itoa(m.ID)

	// The first deployment takes weight 100, the next what is left (0: parked).
	var d1, d2 config.Deployment
	a.call("POST", "/logic-models/"+mid+"/deployments", `{"provider":"openai","upstream_model":"gpt-4o","prices":{"input":2.5,"output":10}}`, http.StatusCreated, &d1)
	if d1.ID == 0 || d1.Weight != 100 || !d1.Enabled || d1.Prices.InputMicros != 2_500_000 || d1.Prices.Currency != "USD" {
		t.Fatalf("deployment 1 %+v", d1)
	}
	// Amounts are exact decimals: a string works, a sub-micro amount is refused.
	if e := a.fails("POST", "/logic-models/"+mid+"/deployments", `{"provider":"azure","upstream_model":"gpt-4o","prices":{"input":0.1234567}}`,
		http.StatusBadRequest, "invalid_json"); !strings.Contains(e.Error.Message, "more than 6 decimal places") {
		t.Fatalf("sub-micro price: %+v", e.Error)
	}
	a.call("POST", "/logic-models/"+mid+"/deployments", `{"provider":"azure","upstream_model":"gpt-4o","weight":0,"prices":{"input":"0.000001","output":0.3}}`, http.StatusCreated, &d2)
	if d2.Prices.InputMicros != 1 || d2.Prices.OutputMicros != 300_000 {
		t.Fatalf("exact prices stored as %+v", d2.Prices)
	}
	if d2.Weight != 0 || d2.Provider != "azure" {
		t.Fatalf("deployment 2 %+v", d2)
	}
	// Canary 90/10: only the fields sent change.
	a.call("PUT", "/deployments/"+itoa(d1.ID), `{"weight":90}`, http.StatusOK, &d1)
	a.call("PUT", "/deployments/"+itoa(d2.ID), `{"weight":10,"capabilities":{"tools":true}}`, http.StatusOK, &d2)
	if d1.Weight != 90 || d1.Prices.OutputMicros != 10*config.Unit || d2.Weight != 10 || !d2.Capabilities.Tools {
		t.Fatalf("weights %+v %+v", d1, d2)
	}
	e := a.fails("PUT", "/deployments/"+itoa(d2.ID), `{"provider":"nope"}`, http.StatusUnprocessableEntity, "validation_failed")
	if e.Error.Fields["provider"] == "" {
		t.Fatalf("unknown provider: %+v", e)
	}
	e = a.fails("POST", "/logic-models/"+mid+"/deployments", `{"provider":"openai","upstream_model":"gpt-4o"}`, http.StatusUnprocessableEntity, "validation_failed")
	if e.Error.Fields["upstream_model"] == "" {
		t.Fatalf("duplicate deployment: %+v", e)
	}

	// GET includes the deployments; the answer round-trips through PUT.
	var got config.LogicModel
	a.call("GET", "/logic-models/"+mid, "", http.StatusOK, &got)
	if len(got.Deployments) != 2 {
		t.Fatalf("model %+v", got)
	}
	got.Description = "flagship chat"
	a.call("PUT", "/logic-models/"+mid, crudJSON(got), http.StatusOK, &got)
	if got.Description != "flagship chat" || got.Code != "gpt-4o" || len(got.Deployments) != 2 {
		t.Fatalf("round trip %+v", got)
	}
	got.Deployments[0].Weight = 50
	e = a.fails("PUT", "/logic-models/"+mid, crudJSON(got), http.StatusUnprocessableEntity, "validation_failed")
	if !strings.Contains(e.Error.Fields["deployments"], "/deployments/") {
		t.Fatalf("deployment change through the model: %+v", e)
	}
	e = a.fails("PUT", "/logic-models/"+mid, `{"kind":"embedding","embedding_dimension":-1}`, http.StatusUnprocessableEntity, "validation_failed")
	if e.Error.Fields["embedding_dimension"] == "" {
		t.Fatalf("bad dimension: %+v", e)
	}
	var list struct {
		LogicModels []config.LogicModel `json:"logic_models"`
	}
	a.call("GET", "/logic-models", "", http.StatusOK, &list)
	if len(list.LogicModels) != 1 || len(list.LogicModels[0].Deployments) != 2 {
		t.Fatalf("list %+v", list)
	}

	// A provider used by a deployment cannot be deleted.
	var provs struct{ Providers []config.Provider }
	a.call("GET", "/providers", "", http.StatusOK, &provs)
	for _, p := range provs.Providers {
		if p.Name == "azure" {
			e = a.fails("DELETE", "/providers/"+itoa(p.ID), "", http.StatusConflict, "referenced")
			if !strings.Contains(e.Error.Message, "deployment gpt-4o") {
				t.Fatalf("referenced message %q", e.Error.Message)
			}
		}
	}

	a.call("DELETE", "/deployments/"+itoa(d2.ID), "", http.StatusNoContent)
	a.fails("PUT", "/deployments/"+itoa(d2.ID), `{"weight":1}`, http.StatusNotFound, "not_found")
	a.fails("DELETE", "/deployments/"+itoa(d2.ID), "", http.StatusNotFound, "not_found")
	a.call("DELETE", "/logic-models/"+mid, "", http.StatusNoContent)
	a.fails("GET", "/logic-models/"+mid, "", http.StatusNotFound, "not_found")
	a.fails("POST", "/logic-models/"+mid+"/deployments", `{"provider":"openai","upstream_model":"x"}`, http.StatusNotFound, "not_found")
}

func TestAPICRUDRouteGroupsTiersCandidates(t *testing.T) {
	env := webtest.New(t)
	a := newCRUD(t, env)
	s := crudSeed(t, a)
	a.call("POST", "/logic-models", `{"code":"big"}`, http.StatusCreated)
	a.call("POST", "/logic-models", `{"code":"huge"}`, http.StatusCreated)

	g := s.group
	if len(g.Tiers) != 3 {
		t.Fatalf("tiers %+v", g.Tiers)
	}
	fast := g.Tier(config.TierFast)
	if fast.TimeoutMS != 15000 || len(fast.Candidates) != 1 || fast.Candidates[0].Weight != 100 || fast.Candidates[0].Priority != 1 {
		t.Fatalf("fast tier %+v", fast)
	}
	tid := itoa(fast.ID)

	var tr config.Tier
	a.call("PUT", "/tiers/"+tid, `{"timeout_ms":7000,"first_chunk_timeout_ms":2000}`, http.StatusOK, &tr)
	if tr.TimeoutMS != 7000 || tr.FirstChunkTimeoutMS != 2000 || tr.Name != config.TierFast || len(tr.Candidates) != 1 {
		t.Fatalf("tier %+v", tr)
	}
	e := a.fails("PUT", "/tiers/"+tid, `{"timeout_ms":1000}`, http.StatusUnprocessableEntity, "validation_failed")
	if e.Error.Fields["first_chunk_timeout_ms"] == "" {
		t.Fatalf("first chunk over timeout: %+v", e)
	}
	a.fails("PUT", "/tiers/"+tid, `{"name":"deep"}`, http.StatusUnprocessableEntity, "validation_failed")

	// Two more candidates: big behind small, huge sharing big's level 90/10.
	var big, huge config.Candidate
	a.call("POST", "/tiers/"+tid+"/candidates", `{"logic_model":"big","weight":90}`, http.StatusCreated, &big)
	a.call("POST", "/tiers/"+tid+"/candidates", `{"logic_model":"huge","priority":2,"weight":10}`, http.StatusCreated, &huge)
	if big.Priority != 2 || big.Weight != 90 || huge.Priority != 2 {
		t.Fatalf("candidates %+v %+v", big, huge)
	}
	e = a.fails("POST", "/tiers/"+tid+"/candidates", `{"logic_model":"nope"}`, http.StatusUnprocessableEntity, "validation_failed")
	if e.Error.Fields["logic_model"] == "" {
		t.Fatalf("unknown model: %+v", e)
	}
	a.fails("POST", "/tiers/"+tid+"/candidates", `{"logic_model":"big"}`, http.StatusUnprocessableEntity, "validation_failed")

	a.call("PUT", "/candidates/"+itoa(huge.ID), `{"weight":20}`, http.StatusOK, &huge)
	if huge.Weight != 20 || huge.Priority != 2 || huge.LogicModel != "huge" {
		t.Fatalf("updated candidate %+v", huge)
	}
	e = a.fails("PUT", "/candidates/"+itoa(huge.ID), `{"priority":-1}`, http.StatusUnprocessableEntity, "validation_failed")
	if e.Error.Fields["priority"] == "" {
		t.Fatalf("bad priority: %+v", e)
	}
	a.fails("PUT", "/candidates/"+itoa(huge.ID), `{"logic_model":"big"}`, http.StatusUnprocessableEntity, "validation_failed")

	// Moving huge up splits it out in front of big; weights stay.
	a.call("POST", "/candidates/"+itoa(huge.ID)+"/move", `{"direction":"up"}`, http.StatusOK, &tr)
	order := map[string]int{}
	for _, cd := range tr.Candidates {
		order[cd.LogicModel] = cd.Priority
	}
	if order["small"] != 1 || order["huge"] != 2 || order["big"] != 3 {
		t.Fatalf("after move: %+v", tr.Candidates)
	}
	a.fails("POST", "/candidates/"+itoa(huge.ID)+"/move", `{"direction":"sideways"}`, http.StatusUnprocessableEntity, "validation_failed")

	a.call("DELETE", "/candidates/"+itoa(huge.ID), "", http.StatusNoContent)
	a.fails("DELETE", "/candidates/"+itoa(huge.ID), "", http.StatusNotFound, "not_found")
	a.fails("PUT", "/candidates/"+itoa(huge.ID), `{"weight":1}`, http.StatusNotFound, "not_found")
	a.fails("POST", "/candidates/"+itoa(huge.ID)+"/move", `{"direction":"up"}`, http.StatusNotFound, "not_found")

	// A logic model in a chain cannot be deleted.
	e = a.fails("DELETE", "/logic-models/"+itoa(s.model.ID), "", http.StatusConflict, "referenced")
	if !strings.Contains(e.Error.Message, "candidate in default") {
		t.Fatalf("referenced message %q", e.Error.Message)
	}

	// Group fields; tiers are read-only here but round-trip.
	var got config.RouteGroup
	a.call("GET", "/route-groups/"+itoa(g.ID), "", http.StatusOK, &got)
	got.Description = "everyone"
	a.call("PUT", "/route-groups/"+itoa(g.ID), crudJSON(got), http.StatusOK, &got)
	if got.Description != "everyone" || got.Name != "default" || len(got.Tiers) != 3 {
		t.Fatalf("round trip %+v", got)
	}
	e = a.fails("PUT", "/route-groups/"+itoa(g.ID), `{"tiers":[]}`, http.StatusUnprocessableEntity, "validation_failed")
	if e.Error.Fields["tiers"] == "" {
		t.Fatalf("tiers change: %+v", e)
	}
	e = a.fails("POST", "/route-groups", `{"name":"bad name!"}`, http.StatusUnprocessableEntity, "validation_failed")
	if e.Error.Fields["name"] == "" {
		t.Fatalf("bad name: %+v", e)
	}
	var list struct {
		RouteGroups []config.RouteGroup `json:"route_groups"`
	}
	a.call("GET", "/route-groups", "", http.StatusOK, &list)
	if len(list.RouteGroups) != 1 || len(list.RouteGroups[0].Tiers) != 3 {
		t.Fatalf("list %+v", list)
	}

	// A group with a caller bound to it cannot be deleted.
	e = a.fails("DELETE", "/route-groups/"+itoa(g.ID), "", http.StatusConflict, "referenced")
	if !strings.Contains(e.Error.Message, "caller search") {
		t.Fatalf("referenced message %q", e.Error.Message)
	}
	a.call("DELETE", "/callers/"+itoa(s.caller.ID), "", http.StatusNoContent)
	a.call("DELETE", "/route-groups/"+itoa(g.ID), "", http.StatusNoContent)
	a.fails("GET", "/route-groups/"+itoa(g.ID), "", http.StatusNotFound, "not_found")
	a.fails("PUT", "/tiers/"+tid, `{"timeout_ms":1000}`, http.StatusNotFound, "not_found")
	a.fails("POST", "/tiers/"+tid+"/candidates", `{"logic_model":"big"}`, http.StatusNotFound, "not_found")
}

func TestAPICRUDCallersAndKeys(t *testing.T) {
	env := webtest.New(t)
	a := newCRUD(t, env)
	s := crudSeed(t, a)
	cl := s.caller
	// A caller created without a class is normal: interactive is claimed on purpose.
	if cl.ID == 0 || !cl.Enabled || cl.PriorityClass != config.ClassNormal || cl.RouteGroup != "default" {
		t.Fatalf("created caller %+v", cl)
	}
	id := itoa(cl.ID)

	a.call("PUT", "/callers/"+id, `{"business_line":"search","limits":[{"tier":"fast","rpm":60,"tpm":0,"daily_tokens":0}],"monthly_budget":500}`, http.StatusOK, &cl)
	if cl.BusinessLine != "search" || cl.MonthlyBudgetMicros != 500*config.Unit || len(cl.Limits) != 1 || cl.Limits[0].RPM != 60 {
		t.Fatalf("updated %+v", cl)
	}
	// Limits left out are kept.
	a.call("PUT", "/callers/"+id, `{"priority_class":"batch"}`, http.StatusOK, &cl)
	if cl.PriorityClass != config.ClassBatch || len(cl.Limits) != 1 {
		t.Fatalf("partial update %+v", cl)
	}
	a.call("PUT", "/callers/"+id, `{"priority_class":"interactive"}`, http.StatusOK, &cl)
	if cl.PriorityClass != config.ClassInteractive {
		t.Fatalf("class update %+v", cl)
	}
	e := a.fails("PUT", "/callers/"+id, `{"priority_class":"vip","limits":[{"tier":"fast","rpm":-1}]}`, http.StatusUnprocessableEntity, "validation_failed")
	if e.Error.Fields["priority_class"] == "" || e.Error.Fields["limits.fast.rpm"] == "" {
		t.Fatalf("invalid caller: %+v", e)
	}
	e = a.fails("POST", "/callers", `{"name":"other","route_group":"nope"}`, http.StatusUnprocessableEntity, "validation_failed")
	if e.Error.Fields["route_group"] == "" {
		t.Fatalf("unknown group: %+v", e)
	}

	// A key's plaintext is answered once; only its hash is stored.
	var nk struct {
		Key    string `json:"key"`
		ID     int64  `json:"id"`
		Prefix string `json:"prefix"`
		Name   string `json:"name"`
	}
	a.call("POST", "/callers/"+id+"/keys", `{"name":"prod"}`, http.StatusCreated, &nk)
	if !strings.HasPrefix(nk.Key, store.CallerKeyPrefix) || nk.ID == 0 || !strings.HasPrefix(nk.Key, nk.Prefix) || nk.Name != "prod" {
		t.Fatalf("new key %+v", nk)
	}
	for _, path := range []string{"/callers/" + id, "/callers/" + id + "/keys", "/callers"} {
		if out := a.call("GET", path, "", http.StatusOK); bytes.Contains(out, []byte(nk.Key)) {
			t.Fatalf("GET %s repeats the key's plaintext: %s", path, out)
		}
	}
	var stored struct {
		hash   []byte
		prefix string
	}
	if err := env.Store.DB().QueryRowContext(t.Context(), `SELECT hash, prefix FROM caller_keys WHERE id=$1`, nk.ID).Scan(&stored.hash, &stored.prefix); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(nk.Key))
	if !bytes.Equal(stored.hash, sum[:]) || stored.prefix != nk.Prefix || bytes.Contains(stored.hash, []byte(nk.Key)) {
		t.Fatalf("stored key: hash %x prefix %q", stored.hash, stored.prefix)
	}
	var plain int
	if err := env.Store.DB().QueryRowContext(t.Context(), `SELECT count(*) FROM caller_keys k WHERE position($1 in k::text) > 0`, nk.Key).Scan(&plain); err != nil || plain != 0 {
		t.Fatalf("plaintext found in caller_keys: %d %v", plain, err)
	}
	live, err := env.Store.LiveCallerKeys(t.Context())
	if err != nil || live[sum].Caller != cl.Name {
		t.Fatalf("key not live for the caller: %v", err)
	}

	var keys struct {
		Keys []map[string]any `json:"keys"`
	}
	a.call("GET", "/callers/"+id+"/keys", "", http.StatusOK, &keys)
	if len(keys.Keys) != 1 || keys.Keys[0]["prefix"] != nk.Prefix || keys.Keys[0]["name"] != "prod" || keys.Keys[0]["created_at"] == nil || keys.Keys[0]["revoked_at"] != nil ||
		keys.Keys[0]["caller"] != cl.Name || keys.Keys[0]["created_by"] == "" {
		t.Fatalf("keys %+v", keys)
	}
	for f := range keys.Keys[0] {
		if strings.Contains(f, "hash") || f == "key" {
			t.Fatalf("key listing has field %q", f)
		}
	}
	// Keys are not configuration: the caller does not list them, and they
	// cannot be set through it.
	a.call("GET", "/callers/"+id, "", http.StatusOK, &cl)
	if len(cl.Keys) != 0 {
		t.Fatalf("caller keys %+v", cl.Keys)
	}
	a.call("PUT", "/callers/"+id, crudJSON(cl), http.StatusOK)
	a.fails("PUT", "/callers/"+id, `{"keys":[{"id":1,"prefix":"sy-x"}]}`, http.StatusUnprocessableEntity, "validation_failed")

	var revoked map[string]any
	a.call("POST", "/caller-keys/"+itoa(nk.ID)+"/revoke", "", http.StatusOK, &revoked)
	if revoked["revoked_at"] == nil {
		t.Fatalf("revoke answer %+v", revoked)
	}
	a.call("POST", "/caller-keys/"+itoa(nk.ID)+"/revoke", "", http.StatusOK)
	if live, _ := env.Store.LiveCallerKeys(t.Context()); live[sum].Caller != "" {
		t.Fatal("revoked key still live")
	}
	a.fails("POST", "/caller-keys/99999/revoke", "", http.StatusNotFound, "not_found")

	a.call("DELETE", "/callers/"+id, "", http.StatusNoContent)
	a.fails("GET", "/callers/"+id, "", http.StatusNotFound, "not_found")
	a.fails("GET", "/callers/"+id+"/keys", "", http.StatusNotFound, "not_found")
	a.fails("POST", "/callers/"+id+"/keys", `{"name":"x"}`, http.StatusNotFound, "not_found")
}

func TestAPICRUDAuthAndRoles(t *testing.T) {
	env := webtest.New(t)
	admin := newCRUD(t, env)
	s := crudSeed(t, admin)
	viewer := newAPI(t, env, store.RoleViewer)
	tid := itoa(s.group.Tiers[0].ID)
	cid := itoa(s.group.Tiers[0].Candidates[0].ID)
	kid := itoa(s.provider.Keys[0].ID)

	reads := []string{"/providers", "/providers/" + itoa(s.provider.ID), "/tenants", "/logic-models", "/logic-models/" + itoa(s.model.ID),
		"/route-groups", "/route-groups/" + itoa(s.group.ID), "/callers", "/callers/" + itoa(s.caller.ID), "/callers/" + itoa(s.caller.ID) + "/keys"}
	writes := []struct{ method, path, body string }{
		{"POST", "/providers", `{"name":"x","protocol":"openai","base_url":"https://x.test"}`},
		{"PUT", "/providers/" + itoa(s.provider.ID), `{"notes":"x"}`},
		{"DELETE", "/providers/" + itoa(s.provider.ID), ""},
		{"POST", "/providers/" + itoa(s.provider.ID) + "/keys", `{"secret":"sk-0123456789"}`},
		{"PUT", "/provider-keys/" + kid, `{"status":"disabled"}`},
		{"DELETE", "/provider-keys/" + kid, ""},
		{"POST", "/tenants", `{"name":"t"}`},
		{"POST", "/logic-models", `{"code":"m"}`},
		{"PUT", "/logic-models/" + itoa(s.model.ID), `{"description":"x"}`},
		{"DELETE", "/logic-models/" + itoa(s.model.ID), ""},
		{"POST", "/logic-models/" + itoa(s.model.ID) + "/deployments", `{"provider":"openai","upstream_model":"y"}`},
		{"POST", "/route-groups", `{"name":"g"}`},
		{"PUT", "/tiers/" + tid, `{"timeout_ms":1000,"first_chunk_timeout_ms":500}`},
		{"POST", "/tiers/" + tid + "/candidates", `{"logic_model":"small"}`},
		{"PUT", "/candidates/" + cid, `{"weight":1}`},
		{"POST", "/candidates/" + cid + "/move", `{"direction":"down"}`},
		{"DELETE", "/candidates/" + cid, ""},
		{"POST", "/callers", `{"name":"c","route_group":"default"}`},
		{"DELETE", "/callers/" + itoa(s.caller.ID), ""},
		{"POST", "/callers/" + itoa(s.caller.ID) + "/keys", `{"name":"k"}`},
	}

	for _, p := range reads {
		if code, body := viewer.do("GET", p, nil); code != http.StatusOK {
			t.Errorf("viewer GET %s: %d %s", p, code, body)
		}
		if code, _ := crudRaw(t, env, "GET", p, "", "", nil); code != http.StatusUnauthorized {
			t.Errorf("GET %s without a token: %d", p, code)
		}
		if code, body := crudRaw(t, env, "GET", p, "sya-not-a-real-token", "", nil); code != http.StatusUnauthorized || !strings.Contains(string(body), "unauthorized") {
			t.Errorf("GET %s with a bad token: %d %s", p, code, body)
		}
	}
	for _, w := range writes {
		var body []byte
		if w.body != "" {
			body = []byte(w.body)
		}
		if code, out := viewer.do(w.method, w.path, body); code != http.StatusForbidden || !strings.Contains(string(out), `"forbidden"`) {
			t.Errorf("viewer %s %s: %d %s", w.method, w.path, code, out)
		}
		if code, _ := crudRaw(t, env, w.method, w.path, "", "application/json", body); code != http.StatusUnauthorized {
			t.Errorf("%s %s without a token: %d", w.method, w.path, code)
		}
	}
	if code, _ := viewer.do("POST", "/caller-keys/1/revoke", nil); code != http.StatusForbidden {
		t.Errorf("viewer revoke: %d", code)
	}
	// Nothing changed.
	var after crudSeeded
	admin.call("GET", "/providers/"+itoa(s.provider.ID), "", http.StatusOK, &after.provider)
	admin.call("GET", "/route-groups/"+itoa(s.group.ID), "", http.StatusOK, &after.group)
	if crudJSON(after.provider) != crudJSON(s.provider) || crudJSON(after.group) != crudJSON(s.group) {
		t.Fatalf("viewer requests changed the draft:\n%s\n%s", crudJSON(after.provider), crudJSON(after.group))
	}
}

func TestAPICRUDBadBodies(t *testing.T) {
	env := webtest.New(t)
	a := newCRUD(t, env)
	s := crudSeed(t, a)
	before, _, err := env.Store.Draft(t.Context())
	if err != nil {
		t.Fatal(err)
	}

	targets := []struct{ method, path string }{
		{"POST", "/providers"},
		{"PUT", "/providers/" + itoa(s.provider.ID)},
		{"POST", "/providers/" + itoa(s.provider.ID) + "/keys"},
		{"PUT", "/provider-keys/" + itoa(s.provider.Keys[0].ID)},
		{"POST", "/tenants"},
		{"POST", "/logic-models"},
		{"PUT", "/logic-models/" + itoa(s.model.ID)},
		{"POST", "/logic-models/" + itoa(s.model.ID) + "/deployments"},
		{"PUT", "/deployments/" + itoa(s.model.Deployments[0].ID)},
		{"POST", "/route-groups"},
		{"PUT", "/route-groups/" + itoa(s.group.ID)},
		{"PUT", "/tiers/" + itoa(s.group.Tiers[0].ID)},
		{"POST", "/tiers/" + itoa(s.group.Tiers[0].ID) + "/candidates"},
		{"PUT", "/candidates/" + itoa(s.group.Tiers[0].Candidates[0].ID)},
		{"POST", "/candidates/" + itoa(s.group.Tiers[0].Candidates[0].ID) + "/move"},
		{"POST", "/callers"},
		{"PUT", "/callers/" + itoa(s.caller.ID)},
		{"POST", "/callers/" + itoa(s.caller.ID) + "/keys"},
	}
	bodies := []struct {
		name, body, want string
	}{
		{"empty", ``, "empty"},
		{"blank", " \n\t", "empty"},
		{"malformed", `{"name":`, "malformed"},
		{"not an object", `["a"]`, "object"},
		{"null", `null`, "object"},
		{"trailing garbage", `{"weight":1} trailing`, "after"},
		{"trailing brace", `{"weight":1}}`, "after"},
		{"second object", `{"weight":1}{"weight":2}`, "after"},
		{"wrong type", `{"weight":"heavy"}`, "weight"},
		{"wrong type nested", `{"name":5}`, "name"},
		{"unknown field", `{"nope":1}`, `"nope"`},
		{"invalid utf-8", "{\"name\":\"\xff\xfe\"}", "UTF-8"},
		{"huge number", `{"weight":1e400}`, "weight"},
	}
	for _, tg := range targets {
		for _, b := range bodies {
			t.Run(tg.method+tg.path+"/"+b.name, func(t *testing.T) {
				code, out := a.do(tg.method, tg.path, []byte(b.body))
				var e crudErr
				_ = json.Unmarshal(out, &e)
				if code != http.StatusBadRequest || e.Error.Code != "invalid_json" || !strings.Contains(e.Error.Message, b.want) {
					// A field some targets lack is reported as unknown: still invalid_json.
					if code == http.StatusBadRequest && e.Error.Code == "invalid_json" && strings.Contains(e.Error.Message, "unknown field") {
						return
					}
					t.Fatalf("got %d %s, want 400 invalid_json mentioning %q", code, out, b.want)
				}
			})
		}
		// A body that is not JSON is refused as such.
		if code, out := crudRaw(t, env, tg.method, tg.path, a.token, "text/plain", []byte(`{"name":"x"}`)); code != http.StatusUnsupportedMediaType || !strings.Contains(string(out), "unsupported_media_type") {
			t.Errorf("%s %s as text/plain: %d %s", tg.method, tg.path, code, out)
		}
		if code, out := crudRaw(t, env, tg.method, tg.path, a.token, "application/x-www-form-urlencoded", []byte(`name=x`)); code != http.StatusUnsupportedMediaType {
			t.Errorf("%s %s as a form: %d %s", tg.method, tg.path, code, out)
		}
	}
	// JSON without a Content-Type header, or with a charset, is accepted.
	if code, out := crudRaw(t, env, "POST", "/tenants", a.token, "", []byte(`{"name":"no-ctype"}`)); code != http.StatusCreated {
		t.Errorf("no Content-Type: %d %s", code, out)
	}
	if code, out := crudRaw(t, env, "POST", "/tenants", a.token, "application/json; charset=utf-8", []byte(`{"name":"charset"}`)); code != http.StatusCreated {
		t.Errorf("charset: %d %s", code, out)
	}
	// None of the refused bodies changed the draft.
	after, _, err := env.Store.Draft(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	after.Tenants, before.Tenants = nil, nil
	if crudJSON(after) != crudJSON(before) {
		t.Fatalf("refused bodies changed the draft:\n%s\n%s", crudJSON(before), crudJSON(after))
	}
}

func TestAPICRUDUnknownIDs(t *testing.T) {
	env := webtest.New(t)
	a := newCRUD(t, env)
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/providers/4242", ""},
		{"PUT", "/providers/4242", `{"notes":"x"}`},
		{"DELETE", "/providers/4242", ""},
		{"POST", "/providers/4242/keys", `{"secret":"sk-0123456789"}`},
		{"PUT", "/provider-keys/4242", `{"status":"active"}`},
		{"DELETE", "/provider-keys/4242", ""},
		{"GET", "/tenants/4242", ""},
		{"PUT", "/tenants/4242", `{"name":"x"}`},
		{"DELETE", "/tenants/4242", ""},
		{"GET", "/logic-models/4242", ""},
		{"PUT", "/logic-models/4242", `{"code":"x"}`},
		{"DELETE", "/logic-models/4242", ""},
		{"POST", "/logic-models/4242/deployments", `{"provider":"p","upstream_model":"m"}`},
		{"PUT", "/deployments/4242", `{"weight":1}`},
		{"DELETE", "/deployments/4242", ""},
		{"GET", "/route-groups/4242", ""},
		{"PUT", "/route-groups/4242", `{"name":"x"}`},
		{"DELETE", "/route-groups/4242", ""},
		{"PUT", "/tiers/4242", `{"timeout_ms":1000}`},
		{"POST", "/tiers/4242/candidates", `{"logic_model":"m"}`},
		{"PUT", "/candidates/4242", `{"weight":1}`},
		{"POST", "/candidates/4242/move", `{"direction":"up"}`},
		{"DELETE", "/candidates/4242", ""},
		{"GET", "/callers/4242", ""},
		{"PUT", "/callers/4242", `{"name":"x"}`},
		{"DELETE", "/callers/4242", ""},
		{"GET", "/callers/4242/keys", ""},
		{"POST", "/callers/4242/keys", `{"name":"x"}`},
		{"POST", "/caller-keys/4242/revoke", ""},
		{"GET", "/providers/abc", ""},
		{"DELETE", "/callers/-1", ""},
	} {
		e := a.fails(r.method, r.path, r.body, http.StatusNotFound, "not_found")
		if e.Error.Type != "not_found_error" {
			t.Errorf("%s %s: %+v", r.method, r.path, e)
		}
	}
}
