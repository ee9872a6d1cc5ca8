package routing

import (
	"net/http"
	"strconv"
	"strings"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
)

// authenticate finds the caller for the bearer key.
func (x *exchange) authenticate() bool {
	x.rt = x.j.Live.Current()
	if x.rt == nil {
		x.reject(http.StatusServiceUnavailable, CodeNoAvailableModel, "", "nothing has been published yet: an operator must publish a configuration in the Switchyard console")
		return false
	}
	x.rec.ConfigVersion = x.int64p(x.rt.Version)
	if x.req.CallerID != 0 {
		// A console test request: the caller was chosen by a signed-in
		// operator, not authenticated by key.
		x.caller = x.rt.Callers[x.req.CallerID]
		if x.caller == nil {
			x.reject(http.StatusNotFound, CodeCallerNotLive, "", "this caller is not in the live version; publish first")
			return false
		}
		x.rec.CallerID, x.rec.Caller, x.rec.Tenant, x.rec.RouteGroup = x.int64p(x.caller.ID), x.caller.Name, x.caller.Tenant, x.caller.Group.Name
		return x.caller.Enabled || x.refuseDisabled()
	}
	key, ok := strings.CutPrefix(x.req.Authorization, "Bearer ")
	if key = strings.TrimSpace(key); (!ok || key == "") && x.req.APIKey != "" {
		key, ok = strings.TrimSpace(x.req.APIKey), true
	}
	if !ok || key == "" {
		x.a.Header.Set("x-should-retry", "false")
		x.reject(http.StatusUnauthorized, CodeInvalidAPIKey, adapter.ClassAuth, "missing API key: send your Switchyard caller key as 'Authorization: Bearer <key>', 'x-api-key: <key>' or 'api-key: <key>'")
		return false
	}
	// One hash of the key serves the lookup and the call log's fingerprint.
	h := config.HashCallerKey(key)
	x.rec.PresentedKey = config.PresentedKeyFingerprintHashed(key, h)
	var k config.LiveKey
	x.caller, k = x.rt.AuthenticateHashed(h)
	if x.caller == nil {
		x.a.Header.Set("x-should-retry", "false")
		msg := "invalid or revoked API key"
		if k.Caller != "" {
			msg = "API key suspended: its caller " + strconv.Quote(k.Caller) + " is absent from the live version " +
				strconv.FormatInt(x.rt.Version, 10) + "; the key works again when a version that contains the caller is published"
		}
		x.reject(http.StatusUnauthorized, CodeInvalidAPIKey, adapter.ClassAuth, msg)
		return false
	}
	if r := keyStateRefusal(k, x.start); r != nil {
		x.a.Header.Set("x-should-retry", "false")
		x.reject(http.StatusUnauthorized, r.Code, adapter.ClassAuth, r.Text())
		return false
	}
	x.key = k
	if x.j.KeyUse != nil {
		x.j.KeyUse.CallerKeyUsed(k.ID, x.start, x.req.ClientAddr)
	}
	x.rec.CallerID, x.rec.Caller, x.rec.Tenant, x.rec.RouteGroup = x.int64p(x.caller.ID), x.caller.Name, x.caller.Tenant, x.caller.Group.Name
	if d := doorName(x.req.Endpoint); d != "" && !k.Scope.AllowsDoor(d) {
		return x.refuseScope(KeyRefusal{Code: CodeKeyScopeDenied, Kind: ScopeFrontDoor, Asked: string(d), Scope: k.Scope})
	}
	return x.caller.Enabled || x.refuseDisabled()
}

// inScope reports whether the key's scope allows the resolved target;
// false when it refused the request (answer set).
func (x *exchange) inScope(t Target) bool {
	s := x.key.Scope
	switch {
	case t.Explicit != nil && !s.AllowsModel(t.Explicit.Code):
		return x.refuseScope(KeyRefusal{Code: CodeKeyScopeDenied, Kind: ScopeLogicModel, Asked: t.Explicit.Code, Scope: s})
	case t.Explicit == nil && !s.AllowsTier(t.Tier):
		return x.refuseScope(KeyRefusal{Code: CodeKeyScopeDenied, Kind: ScopeTier, Asked: string(t.Tier), Scope: s})
	}
	return true
}

func (x *exchange) refuseScope(r KeyRefusal) bool {
	x.a.Header.Set("x-should-retry", "false")
	x.reject(http.StatusForbidden, r.Code, adapter.ClassAuth, r.Text())
	return false
}

func (x *exchange) refuseDisabled() bool {
	x.a.Header.Set("x-should-retry", "false")
	x.reject(http.StatusForbidden, CodeCallerDisabled, adapter.ClassAuth, "caller "+x.caller.Name+" is disabled")
	return false
}
