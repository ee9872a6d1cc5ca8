package handlers

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/routing/config"
	"switchyard/store/rows"
)

// Admin API: callers and their API keys. A key's plaintext is answered once,
// by the POST that creates it; only its hash is stored.

// APICallers lists the draft's callers with their limits and live keys.
func (h *Handler) APICallers(c echo.Context) error {
	snap, _, err := h.Callers.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	return apiList(c, "callers", snap.Callers)
}

// APICaller returns one caller.
func (h *Handler) APICaller(c echo.Context) error { return apiCallers.get(h, c) }

const callerKeysHint = "manage keys with /admin/api/callers/{id}/keys and /admin/api/caller-keys/{id}/revoke"

// APICallerCreate adds a caller (enabled, normal class, USD unless the body
// says otherwise).
func (h *Handler) APICallerCreate(c echo.Context) error {
	in := config.Caller{Enabled: true, PriorityClass: config.DefaultClass, BudgetCurrency: "USD"}
	return apiCallers.create(h, c, in, func(f config.FieldErrors, in config.Caller) {
		readOnly(f, "keys", in.Keys, nil, "create keys with POST /admin/api/callers/{id}/keys")
	}, h.Callers.CreateCaller)
}

// APICallerUpdate changes a caller; fields left out keep their values, and
// "limits", when sent, replaces all of the caller's limits.
func (h *Handler) APICallerUpdate(c echo.Context) error {
	return apiCallers.update(h, c, apiUpdate[config.Caller]{
		blank: func(in *config.Caller) { in.Keys, in.Limits = nil, nil },
		check: func(f config.FieldErrors, in *config.Caller, cur config.Caller) {
			if in.Limits == nil {
				in.Limits = cur.Limits
			}
			readOnly(f, "keys", in.Keys, cur.Keys, callerKeysHint)
		},
		save: h.Callers.UpdateCaller,
	})
}

// APICallerDelete deletes a caller from the draft; its keys are kept
// (suspended once a version without the caller is live).
func (h *Handler) APICallerDelete(c echo.Context) error {
	return h.apiDelete(c, "caller", h.Callers.DeleteCaller)
}

// apiCallerKey is a caller key as the API lists it: never its hash. A key
// belongs to its caller's name; caller_id is the draft caller of that name
// (0 when the draft has none).
type apiCallerKey struct {
	ID       int64  `json:"id"`
	CallerID int64  `json:"caller_id"`
	Caller   string `json:"caller"`
	Name     string `json:"name"`
	Prefix   string `json:"prefix"`
	// Fingerprint is what call logs record when a request presents the
	// key (the presented_key search).
	Fingerprint string     `json:"fingerprint"`
	CreatedAt   time.Time  `json:"created_at"`
	CreatedBy   string     `json:"created_by"`
	RevokedAt   *time.Time `json:"revoked_at"`
	RevokedBy   *string    `json:"revoked_by"`
	Owner       string     `json:"owner"`
	ExpiresAt   *time.Time `json:"expires_at"`
	// Scope: empty lists allow everything.
	Scope config.KeyScope `json:"scope"`
	// RotatedFrom is the key this one replaced; RevokeAt, on a rotated
	// key, the end of its grace period.
	RotatedFrom  *int64     `json:"rotated_from"`
	RevokeAt     *time.Time `json:"revoke_at"`
	LastUsedAt   *time.Time `json:"last_used_at"`
	LastUsedAddr *string    `json:"last_used_addr"`
}

func toAPICallerKey(k rows.CallerKeyInfo, callerID int64) apiCallerKey {
	return apiCallerKey{ID: k.ID, CallerID: callerID, Caller: k.CallerName, Name: k.Name, Prefix: k.Prefix, Fingerprint: k.Fingerprint(),
		CreatedAt: k.CreatedAt, CreatedBy: k.CreatedBy, RevokedAt: k.RevokedAt, RevokedBy: k.RevokedBy, Owner: k.Owner, ExpiresAt: k.ExpiresAt,
		Scope: k.Scope(), RotatedFrom: k.RotatedFrom, RevokeAt: k.RevokeAt, LastUsedAt: k.LastUsedAt, LastUsedAddr: k.LastUsedAddr}
}

// APICallerKeys lists a caller's keys, revoked ones included.
func (h *Handler) APICallerKeys(c echo.Context) error {
	id, err := apiID(c, "caller")
	if err != nil {
		return apiFail(c, err)
	}
	snap, _, err := h.Callers.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	cl, ok := apiCallers.find(snap, id)
	if !ok {
		return apiFail(c, apiNotFound("caller", id))
	}
	keys, err := h.Callers.CallerKeys(c.Request().Context(), cl.Name)
	if err != nil {
		return err
	}
	out := make([]apiCallerKey, 0, len(keys))
	for _, k := range keys {
		out = append(out, toAPICallerKey(k, id))
	}
	return apiList(c, "keys", out)
}

type apiCallerKeyIn struct {
	Name      string          `json:"name"`
	Owner     string          `json:"owner"`
	ExpiresAt *time.Time      `json:"expires_at"`
	Scope     config.KeyScope `json:"scope"`
}

// apiNewCallerKey is the only answer that carries a caller key's plaintext.
type apiNewCallerKey struct {
	Key      string `json:"key"`
	ID       int64  `json:"id"`
	CallerID int64  `json:"caller_id"`
	Name     string `json:"name"`
	Prefix   string `json:"prefix"`
}

// APICallerKeyCreate makes a new API key for a caller: {"name", "owner",
// "expires_at", "scope": {"tiers", "models", "doors"}}, all optional. The
// plaintext is in this answer only.
func (h *Handler) APICallerKeyCreate(c echo.Context) error {
	id, err := apiID(c, "caller")
	if err != nil {
		return apiFail(c, err)
	}
	snap, _, err := h.Callers.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	cl, ok := apiCallers.find(snap, id)
	if !ok {
		return apiFail(c, apiNotFound("caller", id))
	}
	var in apiCallerKeyIn
	if err := readJSON(c, &in); err != nil {
		return apiFail(c, err)
	}
	plain, k, err := h.Callers.CreateCallerKeyWith(c.Request().Context(), cl.Name, rows.NewCallerKey(in), httpx.CurrentPrincipal(c).Name)
	if err != nil && plain == "" {
		return apiFail(c, orNotFound(err, "caller", id))
	}
	if err != nil {
		// The key exists; only the reload notification failed. Instances
		// still pick it up on their periodic check, so hand it out.
		h.Log.Warn("admin api: caller key created, notify failed", "id", k.ID, "err", err)
	}
	h.audit(c, "caller key created", k.ID)
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusCreated, apiNewCallerKey{Key: plain, ID: k.ID, CallerID: id, Name: k.Name, Prefix: k.Prefix})
}

// APICallerKeyRevoke revokes a caller key for good and answers it. Revoking
// a revoked key changes nothing.
func (h *Handler) APICallerKeyRevoke(c echo.Context) error {
	id, err := apiID(c, "caller key")
	if err != nil {
		return apiFail(c, err)
	}
	ctx := c.Request().Context()
	callerName, err := h.Callers.CallerKeyCaller(ctx, id)
	if err != nil {
		return apiFail(c, orNotFound(err, "caller key", id))
	}
	// ErrNotFound here means it was already revoked.
	if err := h.Callers.RevokeCallerKey(ctx, id, httpx.CurrentPrincipal(c).Name); err != nil && !errors.Is(err, rows.ErrNotFound) {
		return err
	}
	h.audit(c, "caller key revoked", id)
	keys, err := h.Callers.CallerKeys(ctx, callerName)
	if err != nil {
		return err
	}
	cid, err := h.draftCallerID(ctx, callerName)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if k.ID == id {
			return c.JSON(http.StatusOK, toAPICallerKey(k, cid))
		}
	}
	return apiFail(c, apiNotFound("caller key", id))
}

type apiRotateIn struct {
	// Grace is how long the old key keeps working: a duration ("24h").
	Grace string `json:"grace"`
}

// apiRotation answers a rotation: the new key's plaintext (in this answer
// only) and when the old key stops working.
type apiRotation struct {
	apiNewCallerKey
	OldKeyID int64     `json:"old_key_id"`
	RevokeAt time.Time `json:"old_key_revoke_at"`
}

// APICallerKeyRotate rotates a caller key: {"grace": "24h"}. The answer
// carries the new key's plaintext; the old key works until
// old_key_revoke_at.
func (h *Handler) APICallerKeyRotate(c echo.Context) error {
	id, err := apiID(c, "caller key")
	if err != nil {
		return apiFail(c, err)
	}
	var in apiRotateIn
	if err := readJSON(c, &in); err != nil {
		return apiFail(c, err)
	}
	grace, ok := parseGrace(in.Grace, "")
	if !ok {
		return apiFail(c, (config.FieldErrors{"grace": "must be a duration such as 1h, 24h or 168h"}).Err())
	}
	ctx := c.Request().Context()
	callerName, err := h.Callers.CallerKeyCaller(ctx, id)
	if err != nil {
		return apiFail(c, orNotFound(err, "caller key", id))
	}
	r, err := h.Callers.RotateCallerKey(ctx, id, grace, httpx.CurrentPrincipal(c).Name)
	if err != nil && r.Plaintext == "" {
		return apiFail(c, orNotFound(err, "caller key", id))
	}
	h.audit(c, "caller key rotated", id)
	callerID, err := h.draftCallerID(ctx, callerName)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusCreated, apiRotation{apiNewCallerKey: apiNewCallerKey{Key: r.Plaintext, ID: r.New.ID, CallerID: callerID, Name: r.New.Name, Prefix: r.New.Prefix},
		OldKeyID: id, RevokeAt: r.RevokeAt})
}
