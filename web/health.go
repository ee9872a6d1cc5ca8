package web

import (
	"context"
	"html"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
)

// HealthDetail is what /healthz says about the instance beyond ready or not.
type HealthDetail struct {
	// Postgres is "ok" or "unreachable".
	Postgres string `json:"postgres"`
	// Config is where the served version came from: "postgres", "cache"
	// (the last-known-good copy, PostgreSQL being unreachable) or "none".
	Config string `json:"config"`
	// Version is the served configuration version, 0 before the first
	// publish.
	Version int64 `json:"version"`
	// Draining is true once shutdown began.
	Draining bool `json:"draining"`
	// Notes are sentences for an operator (what is degraded and why).
	Notes []string `json:"notes,omitempty"`
	// Cache is the cached copy served while Config is "cache": which one,
	// and the witness its epoch was checked against.
	Cache *CacheDetail `json:"cache,omitempty"`
}

// CacheDetail is the cached copy an instance started from.
type CacheDetail struct {
	Copy    string `json:"copy"` // "disk <path>" or "redis <key>"
	Version int64  `json:"version"`
	Epoch   int64  `json:"epoch"`
	// Witness is "postgres" or "redis", "" when none answered and
	// SWITCHYARD_CONFIG_CACHE_UNWITNESSED=serve let the copy through.
	Witness      string `json:"witness"`
	WitnessEpoch int64  `json:"witness_epoch"`
}

// healthz answers 200 while the instance serves traffic — a version is
// loaded and it is not draining — with its state as detail: an instance
// serving a cached version while PostgreSQL is down is up (the data plane
// answers) and says so. It answers 503 while starting and draining.
func (s *Server) healthz(c echo.Context) error {
	body := map[string]any{"status": "ok"}
	status := http.StatusOK
	if s.health != nil {
		ctx, cancel := context.WithTimeout(c.Request().Context(), time.Second)
		defer cancel()
		d := s.health(ctx)
		body["postgres"], body["config"], body["version"], body["draining"] = d.Postgres, d.Config, d.Version, d.Draining
		if len(d.Notes) > 0 {
			body["notes"] = d.Notes
		}
		if d.Cache != nil {
			body["cache"] = d.Cache
		}
		if d.Draining {
			body["status"], status = "draining", http.StatusServiceUnavailable
		}
	} else if err := s.pingStore(c.Request().Context()); err != nil {
		body["status"], body["postgres"], status = "unavailable", "unreachable", http.StatusServiceUnavailable
	}
	if s.ready != nil && !s.ready() && status == http.StatusOK {
		body["status"], status = "starting", http.StatusServiceUnavailable
	}
	return c.JSON(status, body)
}

// readyz is the load balancer's check: 200 only while this instance should
// receive requests (loaded, not draining).
func (s *Server) readyz(c echo.Context) error {
	if s.ready != nil && !s.ready() {
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "not ready"})
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}

func (s *Server) pingStore(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return s.store.Ping(ctx)
}

// offlineGate answers every console and admin-API request with a 503 that
// says why while s.offline returns a sentence (the data plane, health,
// metrics and static files are not behind it).
func (s *Server) offlineGate() echo.MiddlewareFunc {
	offline := s.offline
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if offline == nil {
			return next
		}
		return func(c echo.Context) error {
			p := c.Request().URL.Path
			msg := offline()
			if msg == "" {
				return next(c)
			}
			c.Response().Header().Set("Retry-After", "5")
			if strings.HasPrefix(p, "/admin/api/") {
				return httpx.JSONError(c, http.StatusServiceUnavailable, "console_offline", msg, nil)
			}
			c.Response().Header().Set("Content-Type", "text/html; charset=utf-8")
			return c.HTML(http.StatusServiceUnavailable, `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta http-equiv="refresh" content="10"><title>Console unavailable</title><link rel="icon" href="/favicon.ico"><link rel="stylesheet" href="/static/app.css"></head><body><main style="max-width:640px;margin:10vh auto"><div class="panel" data-testid="console-offline"><h1>The console is unavailable</h1><p>`+
				html.EscapeString(msg)+`</p><p>This page reloads every 10 seconds.</p></div></main></body></html>`)
		}
	}
}
