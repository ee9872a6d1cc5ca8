package handlers

import (
	"context"
	"errors"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"switchyard/store/rows"
)

// ssoRecheckBatch bounds the sessions one pass refreshes.
const ssoRecheckBatch = 100

// RecheckSSOSessions refreshes, at the provider's token endpoint, the
// single-sign-on sessions not checked for every. When the provider refuses
// a refresh (invalid_grant: the account was disabled, signed out or its
// grant revoked) the user's sessions and admin API tokens end. Other
// failures (the provider unreachable) leave the sessions be. It returns
// how many users' access ended.
func (h *Handler) RecheckSSOSessions(ctx context.Context, every time.Duration) (int, error) {
	s, err := h.ssoSettings(ctx)
	if err != nil || !s.Configured() {
		return 0, err
	}
	due, err := h.SSO.ClaimSSOSessionsDue(ctx, every, ssoRecheckBatch)
	if err != nil || len(due) == 0 {
		return 0, err
	}
	cl, err := h.newSSOClient(ctx, s, "")
	if err != nil {
		return 0, err
	}
	ctx = oidc.ClientContext(ctx, ssoHTTP)
	ended := 0
	for _, d := range due {
		tok, err := cl.oauth.TokenSource(ctx, &oauth2.Token{RefreshToken: d.RefreshToken}).Token()
		var re *oauth2.RetrieveError
		switch {
		case errors.As(err, &re) && re.ErrorCode == "invalid_grant":
			if err := h.SSO.EndUserAccess(ctx, d.UserID, rows.AccessEndRefreshRefused); err != nil {
				return ended, err
			}
			ended++
			h.Log.Info("single sign-on: the provider refused a refresh; the user's sessions and tokens ended", "user_id", d.UserID)
		case err != nil:
			h.Log.Warn("single sign-on: session refresh failed; trying again later", "user_id", d.UserID, "err", err)
		default:
			if err := h.SSO.SSOSessionRefreshed(ctx, d.Token, tok.RefreshToken); err != nil {
				return ended, err
			}
		}
	}
	return ended, nil
}

// RunSSORecheck runs RecheckSSOSessions every interval until ctx ends, so
// a session outlives its refused refresh by at most about two intervals.
func (h *Handler) RunSSORecheck(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := h.RecheckSSOSessions(ctx, every); err != nil && ctx.Err() == nil {
				h.Log.Warn("single sign-on: session recheck", "err", err)
			}
		}
	}
}
