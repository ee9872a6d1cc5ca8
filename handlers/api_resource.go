package handlers

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"switchyard/routing/config"
)

// apiResource is one kind of object of the draft as the admin API finds,
// answers, creates and updates it; the per-resource handlers only say what
// differs (defaults, read-only members, the store call).
type apiResource[T any] struct {
	what string                    // names it in messages and audit lines: "logic model"
	all  func(config.Snapshot) []T // every such object of the draft, nested ones included
	id   func(*T) *int64           // the object's id member
}

// find looks the object up by id in snap.
func (r apiResource[T]) find(snap config.Snapshot, id int64) (T, bool) {
	for _, x := range r.all(snap) {
		if *r.id(&x) == id {
			return x, true
		}
	}
	var zero T
	return zero, false
}

// answer writes the object as the draft now holds it, with status.
func (r apiResource[T]) answer(h *Handler, c echo.Context, status int, id int64) error {
	snap, _, err := h.Drafts.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	x, ok := r.find(snap, id)
	if !ok {
		return apiFail(c, apiNotFound(r.what, id))
	}
	return c.JSON(status, x)
}

// get answers GET on the object named by :id.
func (r apiResource[T]) get(h *Handler, c echo.Context) error {
	id, err := apiID(c, r.what)
	if err != nil {
		return apiFail(c, err)
	}
	return r.answer(h, c, http.StatusOK, id)
}

// create answers POST: the body is decoded onto in (the defaults), must not
// carry an id, and check reports members it may not set. save stores it and
// maps its own errors (a parent's 404); the answer is 201 with the object.
func (r apiResource[T]) create(h *Handler, c echo.Context, in T,
	check func(f config.FieldErrors, in T),
	save func(ctx context.Context, in T) (int64, error),
) error {
	if err := readJSON(c, &in); err != nil {
		return apiFail(c, err)
	}
	f := config.FieldErrors{}
	checkID(f, *r.id(&in), 0)
	if check != nil {
		check(f, in)
	}
	if len(f) > 0 {
		return apiFail(c, apiInvalid(f))
	}
	id, err := save(c.Request().Context(), in)
	if err != nil {
		return apiFail(c, err)
	}
	h.audit(c, r.what+" created", id)
	return r.answer(h, c, http.StatusCreated, id)
}

// apiUpdate is what differs between the resources' PUTs.
type apiUpdate[T any] struct {
	// blank empties, on a copy of the current object, the members the body
	// may not carry or replaces whole (the id is always emptied); decoding
	// then fills in what the body sends.
	blank func(in *T)
	// check reports the read-only members the body changed (in holds what
	// it sent, cur the stored object) and may complete in from cur.
	check func(f config.FieldErrors, in *T, cur T)
	// save stores in as the object id.
	save func(ctx context.Context, id int64, in T) error
}

// update answers PUT on the object named by :id: fields left out keep their
// values; 404 for an unknown id, 422 for a changed id or read-only member.
func (r apiResource[T]) update(h *Handler, c echo.Context, u apiUpdate[T]) error {
	id, err := apiID(c, r.what)
	if err != nil {
		return apiFail(c, err)
	}
	snap, _, err := h.Drafts.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	cur, ok := r.find(snap, id)
	if !ok {
		return apiFail(c, apiNotFound(r.what, id))
	}
	in := cur
	*r.id(&in) = 0
	if u.blank != nil {
		u.blank(&in)
	}
	if err := readJSON(c, &in); err != nil {
		return apiFail(c, err)
	}
	f := config.FieldErrors{}
	checkID(f, *r.id(&in), id)
	if u.check != nil {
		u.check(f, &in, cur)
	}
	if len(f) > 0 {
		return apiFail(c, apiInvalid(f))
	}
	if err := u.save(c.Request().Context(), id, in); err != nil {
		return apiFail(c, orNotFound(err, r.what, id))
	}
	h.audit(c, r.what+" updated", id)
	return r.answer(h, c, http.StatusOK, id)
}

// The admin API's resources.
var (
	apiTenants = apiResource[config.Tenant]{what: "tenant",
		all: func(s config.Snapshot) []config.Tenant { return s.Tenants },
		id:  func(x *config.Tenant) *int64 { return &x.ID }}
	apiCallers = apiResource[config.Caller]{what: "caller",
		all: func(s config.Snapshot) []config.Caller { return s.Callers },
		id:  func(x *config.Caller) *int64 { return &x.ID }}
	apiProviders = apiResource[config.Provider]{what: "provider",
		all: func(s config.Snapshot) []config.Provider { return s.Providers },
		id:  func(x *config.Provider) *int64 { return &x.ID }}
	apiProviderKeys = apiResource[config.ProviderKey]{what: "provider key",
		all: func(s config.Snapshot) (out []config.ProviderKey) {
			for _, p := range s.Providers {
				out = append(out, p.Keys...)
			}
			return out
		},
		id: func(x *config.ProviderKey) *int64 { return &x.ID }}
	apiLogicModels = apiResource[config.LogicModel]{what: "logic model",
		all: func(s config.Snapshot) []config.LogicModel { return s.LogicModels },
		id:  func(x *config.LogicModel) *int64 { return &x.ID }}
	apiDeployments = apiResource[config.Deployment]{what: "deployment",
		all: func(s config.Snapshot) (out []config.Deployment) {
			for _, m := range s.LogicModels {
				out = append(out, m.Deployments...)
			}
			return out
		},
		id: func(x *config.Deployment) *int64 { return &x.ID }}
	apiRouteGroups = apiResource[config.RouteGroup]{what: "route group",
		all: func(s config.Snapshot) []config.RouteGroup { return s.RouteGroups },
		id:  func(x *config.RouteGroup) *int64 { return &x.ID }}
	apiTiers = apiResource[config.Tier]{what: "tier",
		all: func(s config.Snapshot) (out []config.Tier) {
			for _, g := range s.RouteGroups {
				out = append(out, g.Tiers...)
			}
			return out
		},
		id: func(x *config.Tier) *int64 { return &x.ID }}
	apiCandidates = apiResource[config.Candidate]{what: "candidate",
		all: func(s config.Snapshot) (out []config.Candidate) {
			for _, g := range s.RouteGroups {
				for _, t := range g.Tiers {
					out = append(out, t.Candidates...)
				}
			}
			return out
		},
		id: func(x *config.Candidate) *int64 { return &x.ID }}
)
