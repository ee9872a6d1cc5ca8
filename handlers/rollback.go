package handlers

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/routing"
	"switchyard/routing/config"
	"switchyard/store/rows"
	"switchyard/views/pages/versions"
)

// VersionRollbackPreview is the publish page for a rollback: version n's
// content checked and replayed as a publish would, compared with live,
// with the callers it removes, their traffic and the keys it suspends.
// Nothing changes until the operator confirms (VersionRollback).
func (h *Handler) VersionRollbackPreview(c echo.Context) error {
	n, err := idParam(c, "n")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	v, err := h.Versions.Version(ctx, n)
	if err != nil {
		return notFoundOr(err)
	}
	snap, err := config.Decode([]byte(v.Snapshot))
	if err != nil {
		return fmt.Errorf("version %d does not decode: %w", n, err)
	}
	rows.WithoutCallerKeys(&snap)
	p := h.publishPreview(c, h.page(c, fmt.Sprintf("Roll back to v%d", n), "versions"), snap)
	if p.Page.LiveVersion == n {
		return echo.NewHTTPError(http.StatusConflict, fmt.Sprintf("v%d is the live version: there is nothing to roll back to", n))
	}
	rb, err := h.rollbackRemovals(ctx, p.Page.LiveVersion, snap, p.Impact)
	if err != nil {
		return err
	}
	rb.Version = n
	p.Rollback = &rb
	return httpx.Render(c, http.StatusOK, versions.DryRun(p), nil)
}

// rollbackRemovals lists the live callers snap does not contain, with
// their requests in the replayed day and their unrevoked keys.
func (h *Handler) rollbackRemovals(ctx context.Context, live int64, snap config.Snapshot, im *routing.Impact) (versions.RollbackPreview, error) {
	rb := versions.RollbackPreview{TrafficKnown: im != nil}
	if live == 0 {
		return rb, nil
	}
	lv, err := h.Versions.Version(ctx, live)
	if err != nil {
		return rb, err
	}
	ls, err := config.Decode([]byte(lv.Snapshot))
	if err != nil {
		return rb, err
	}
	var names []string
	for _, c := range ls.Callers {
		if !slices.ContainsFunc(snap.Callers, func(s config.Caller) bool { return s.Name == c.Name }) {
			names = append(names, c.Name)
		}
	}
	keys, err := h.Versions.CallerKeys(ctx, names...)
	if err != nil {
		return rb, err
	}
	for _, name := range names {
		rc := versions.RemovedCaller{Name: name}
		if im != nil {
			if i := slices.IndexFunc(im.Gone, func(g routing.GoneCaller) bool { return g.Caller == name }); i >= 0 {
				rc.Requests = im.Gone[i].Requests
			}
		}
		for _, k := range keys {
			if k.CallerName == name && k.RevokedAt == nil {
				rc.Keys = append(rc.Keys, versions.RemovedKey{Prefix: k.Prefix, Name: k.Name})
			}
		}
		rb.Removed = append(rb.Removed, rc)
	}
	return rb, nil
}
