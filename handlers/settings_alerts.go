package handlers

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/routing/alert"
	"switchyard/routing/config"
	"switchyard/views/pages/settings"
)

// alertsPage loads Settings → Alerts.
func (h *Handler) alertsPage(c echo.Context) (settings.AlertsPage, error) {
	ctx := c.Request().Context()
	rules, err := h.Alerts.AlertRules(ctx)
	if err != nil {
		return settings.AlertsPage{}, err
	}
	chans, err := h.Alerts.AlertChannels(ctx)
	if err != nil {
		return settings.AlertsPage{}, err
	}
	evs, err := h.Alerts.AlertEvents(ctx, 50)
	if err != nil {
		return settings.AlertsPage{}, err
	}
	pg := h.page(c, "Alerts", "alerts")
	p := settings.AlertsPage{Page: pg, Rules: rules, CSRF: httpx.CSRFToken(c), CanEdit: pg.Can.EditConfig, Now: time.Now(), Form: settings.ChannelForm{Shape: "generic"}}
	for _, ch := range chans {
		p.Channels = append(p.Channels, settings.AlertChannel{ID: ch.ID, Name: ch.Name, Hint: ch.Hint, Shape: ch.Shape, CanTest: h.PostAlert != nil})
	}
	for _, e := range evs {
		p.Events = append(p.Events, settings.AlertEvent{ID: e.ID, Notice: e.Notice, Silenced: e.Silenced, Delivered: e.Delivered, Waiting: e.Waiting, Failed: e.Failed})
	}
	return p, nil
}

// SettingsAlerts shows Settings → Alerts.
func (h *Handler) SettingsAlerts(c echo.Context) error {
	p, err := h.alertsPage(c)
	if err != nil {
		return err
	}
	return httpx.Render(c, http.StatusOK, settings.Alerts(p), nil)
}

func (h *Handler) renderAlerts(c echo.Context, status int, edit func(*settings.AlertsPage)) error {
	p, err := h.alertsPage(c)
	if err != nil {
		return err
	}
	edit(&p)
	return httpx.Render(c, status, settings.Alerts(p), nil)
}

// SettingsAlertRule saves a rule's thresholds, for and enabled flag.
func (h *Handler) SettingsAlertRule(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	r, err := h.alertRule(ctx, id)
	if err != nil {
		return notFoundOr(err)
	}
	bad := ""
	num := func(name string, dst *int) {
		if v := strings.TrimSpace(c.FormValue(name)); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				bad = name
			}
			*dst = n
		}
	}
	num("window_seconds", &r.Params.WindowSeconds)
	num("min_requests", &r.Params.MinRequests)
	num("open_seconds", &r.Params.OpenSeconds)
	num("within_days", &r.Params.WithinDays)
	var fs, bound int
	fs, bound = int(r.For/time.Second), int(r.Params.BoundMS)
	num("for_seconds", &fs)
	num("bound_ms", &bound)
	r.For, r.Params.BoundMS = time.Duration(fs)*time.Second, int64(bound)
	if v := strings.TrimSpace(c.FormValue("percent")); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			bad = "percent"
		}
		r.Params.Percent = f
	}
	r.Enabled = c.FormValue("enabled") == "on"
	if bad == "" {
		err = h.Alerts.UpdateAlertRule(ctx, r)
	}
	if bad != "" || errors.Is(err, alert.ErrParam) {
		msg := r.Kind.Title() + ": a threshold is not a number"
		if err != nil {
			msg = r.Kind.Title() + ": " + strings.TrimPrefix(err.Error(), "store: update alert rule "+strconv.FormatInt(id, 10)+": ")
		}
		return h.renderAlerts(c, http.StatusUnprocessableEntity, func(p *settings.AlertsPage) { p.Error = msg })
	}
	if err != nil {
		return notFoundOr(err)
	}
	return c.Redirect(http.StatusSeeOther, "/settings/alerts")
}

// SettingsAlertSilence silences a rule for 1h, 4h or 24h, until a time, or
// lifts the silence (off).
func (h *Handler) SettingsAlertSilence(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	r, err := h.alertRule(ctx, id)
	if err != nil {
		return notFoundOr(err)
	}
	now := time.Now()
	switch f := c.FormValue("for"); f {
	case "off":
		r.SilencedUntil = time.Time{}
	case "until":
		t, err := time.ParseInLocation("2006-01-02T15:04", c.FormValue("until"), time.UTC)
		if err != nil || !t.After(now) {
			return h.renderAlerts(c, http.StatusUnprocessableEntity, func(p *settings.AlertsPage) {
				p.Error = "Silence until: pick a time in the future (UTC)."
			})
		}
		r.SilencedUntil = t
	default:
		d, err := time.ParseDuration(f)
		if err != nil || d <= 0 || d > 7*24*time.Hour {
			return echo.NewHTTPError(http.StatusBadRequest, "silence for 1h, 4h, 24h, until a time, or off")
		}
		r.SilencedUntil = now.Add(d)
	}
	if err := h.Alerts.UpdateAlertRule(ctx, r); err != nil {
		return notFoundOr(err)
	}
	return c.Redirect(http.StatusSeeOther, "/settings/alerts")
}

// SettingsAlertChannelCreate adds a webhook.
func (h *Handler) SettingsAlertChannelCreate(c echo.Context) error {
	in := channelInput{Name: c.FormValue("name"), Shape: alert.Shape(c.FormValue("shape")), URL: strings.TrimSpace(c.FormValue("url"))}
	if f := in.validate(); len(f) > 0 {
		return h.renderAlerts(c, http.StatusUnprocessableEntity, func(p *settings.AlertsPage) {
			p.Form = settings.ChannelForm{Name: in.Name, Shape: string(in.Shape), Errors: f}
		})
	}
	if _, err := h.Alerts.CreateAlertChannel(c.Request().Context(), strings.TrimSpace(in.Name), in.Shape, in.URL); err != nil {
		return h.renderAlerts(c, http.StatusUnprocessableEntity, func(p *settings.AlertsPage) {
			p.Form = settings.ChannelForm{Name: in.Name, Shape: string(in.Shape), Errors: config.FieldErrors{"name": "a channel of that name exists already"}}
		})
	}
	return c.Redirect(http.StatusSeeOther, "/settings/alerts")
}

// SettingsAlertChannelDelete removes a webhook.
func (h *Handler) SettingsAlertChannelDelete(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	if err := h.Alerts.DeleteAlertChannel(c.Request().Context(), id); err != nil {
		return notFoundOr(err)
	}
	return c.Redirect(http.StatusSeeOther, "/settings/alerts")
}

// SettingsAlertChannelTest posts a test message to a webhook now and says
// how it went.
func (h *Handler) SettingsAlertChannelTest(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	shape, url, err := h.Alerts.AlertChannelTarget(ctx, id)
	if err != nil {
		return notFoundOr(err)
	}
	if h.PostAlert == nil {
		return echo.NewHTTPError(http.StatusServiceUnavailable, "this instance cannot send alerts")
	}
	now := time.Now()
	n := alert.Notice{Rule: alert.Rule{Kind: alert.KindTierUnservable}, Subject: alert.Subject{Kind: alert.SubjectTier, Name: "test/standard"},
		Event: alert.EventFiring, FiredAt: now, At: now}
	perr := h.PostAlert(ctx, shape, url, n)
	return h.renderAlerts(c, http.StatusOK, func(p *settings.AlertsPage) {
		if perr != nil {
			p.Error = "The test message failed: " + perr.Error()
		} else {
			p.Notice = "A test message was sent (a made-up route group × tier test/standard; the payload says test: true)."
		}
	})
}
