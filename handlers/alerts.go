package handlers

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"switchyard/routing/alert"
	"switchyard/routing/config"
	"switchyard/store/rows"
)

// AlertStore is the storage of Settings → Alerts, the admin API's alert
// routes and the overview's firing alerts. *store.Store satisfies it.
type AlertStore interface {
	AlertRules(ctx context.Context) ([]alert.Rule, error)
	UpdateAlertRule(ctx context.Context, r alert.Rule) error
	AlertChannels(ctx context.Context) ([]rows.AlertChannel, error)
	CreateAlertChannel(ctx context.Context, name string, shape alert.Shape, rawURL string) (int64, error)
	DeleteAlertChannel(ctx context.Context, id int64) error
	AlertChannelTarget(ctx context.Context, id int64) (alert.Shape, string, error)
	AlertEvents(ctx context.Context, limit int) ([]rows.AlertEvent, error)
	FiringAlerts(ctx context.Context) ([]rows.FiringAlert, error)
}

// AlertPoster sends one notice to a webhook (worker.Post); the gateway sets it.
type AlertPoster func(ctx context.Context, shape alert.Shape, url string, n alert.Notice) error

// apiRule is a rule as the admin API reads and writes it.
type apiRule struct {
	ID            int64        `json:"id"`
	Kind          alert.Kind   `json:"kind"`
	Title         string       `json:"title"`
	Params        alert.Params `json:"params"`
	ForSeconds    int          `json:"for_seconds"`
	Enabled       bool         `json:"enabled"`
	SilencedUntil *time.Time   `json:"silenced_until"`
}

func toAPIRule(r alert.Rule) apiRule {
	out := apiRule{ID: r.ID, Kind: r.Kind, Title: r.Kind.Title(), Params: r.Params, ForSeconds: int(r.For / time.Second), Enabled: r.Enabled}
	if !r.SilencedUntil.IsZero() {
		t := r.SilencedUntil.UTC()
		out.SilencedUntil = &t
	}
	return out
}

// APIAlertRules lists the alert rules.
func (h *Handler) APIAlertRules(c echo.Context) error {
	rules, err := h.Alerts.AlertRules(c.Request().Context())
	if err != nil {
		return err
	}
	out := make([]apiRule, len(rules))
	for i, r := range rules {
		out[i] = toAPIRule(r)
	}
	return apiList(c, "rules", out)
}

// APIAlertRuleUpdate changes a rule's parameters, for_seconds, enabled flag
// and silence; fields left out keep their values, the kind stays.
func (h *Handler) APIAlertRuleUpdate(c echo.Context) error {
	id, err := apiID(c, "alert rule")
	if err != nil {
		return apiFail(c, err)
	}
	ctx := c.Request().Context()
	cur, err := h.alertRule(ctx, id)
	if err != nil {
		return apiFail(c, err)
	}
	body := toAPIRule(cur)
	if err := readJSON(c, &body); err != nil {
		return apiFail(c, err)
	}
	r := alert.Rule{ID: id, Kind: cur.Kind, Params: body.Params, For: time.Duration(body.ForSeconds) * time.Second, Enabled: body.Enabled}
	if body.SilencedUntil != nil {
		r.SilencedUntil = *body.SilencedUntil
	}
	if err := h.Alerts.UpdateAlertRule(ctx, r); err != nil {
		if errors.Is(err, alert.ErrParam) {
			return apiFail(c, apiInvalid(config.FieldErrors{"params": err.Error()}))
		}
		return apiFail(c, err)
	}
	h.audit(c, "alert rule updated", id)
	return c.JSON(http.StatusOK, toAPIRule(r))
}

func (h *Handler) alertRule(ctx context.Context, id int64) (alert.Rule, error) {
	rules, err := h.Alerts.AlertRules(ctx)
	if err != nil {
		return alert.Rule{}, err
	}
	for _, r := range rules {
		if r.ID == id {
			return r, nil
		}
	}
	return alert.Rule{}, apiNotFound("alert rule", id)
}

// APIAlertChannels lists the webhook channels (their URLs stay sealed).
func (h *Handler) APIAlertChannels(c echo.Context) error {
	chans, err := h.Alerts.AlertChannels(c.Request().Context())
	if err != nil {
		return err
	}
	type channel struct {
		ID      int64       `json:"id"`
		Name    string      `json:"name"`
		Shape   alert.Shape `json:"shape"`
		URLHint string      `json:"url_hint"`
		Enabled bool        `json:"enabled"`
	}
	out := make([]channel, len(chans))
	for i, ch := range chans {
		out[i] = channel{ch.ID, ch.Name, ch.Shape, ch.Hint, ch.Enabled}
	}
	return apiList(c, "channels", out)
}

// channelInput is a new webhook channel.
type channelInput struct {
	Name  string      `json:"name"`
	Shape alert.Shape `json:"shape"`
	URL   string      `json:"url"`
}

// validate returns the input's field errors (shared by the form and the API).
func (in channelInput) validate() config.FieldErrors {
	f := config.FieldErrors{}
	if strings.TrimSpace(in.Name) == "" {
		f["name"] = "give the channel a name"
	}
	if !in.Shape.Valid() {
		f["shape"] = "choose generic or slack"
	}
	if u, err := url.Parse(in.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		f["url"] = "an http(s) URL, such as https://hooks.slack.com/services/…"
	}
	return f
}

// APIAlertChannelCreate adds a webhook channel.
func (h *Handler) APIAlertChannelCreate(c echo.Context) error {
	in := channelInput{Shape: alert.ShapeGeneric}
	if err := readJSON(c, &in); err != nil {
		return apiFail(c, err)
	}
	if f := in.validate(); len(f) > 0 {
		return apiFail(c, apiInvalid(f))
	}
	id, err := h.Alerts.CreateAlertChannel(c.Request().Context(), strings.TrimSpace(in.Name), in.Shape, in.URL)
	if err != nil {
		return err
	}
	h.audit(c, "alert channel created", id)
	return c.JSON(http.StatusCreated, map[string]any{"id": id})
}

// APIAlertChannelDelete removes a webhook channel.
func (h *Handler) APIAlertChannelDelete(c echo.Context) error {
	return h.apiDelete(c, "alert channel", h.Alerts.DeleteAlertChannel)
}

// APIAlertEvents lists the newest alert events with their deliveries.
func (h *Handler) APIAlertEvents(c echo.Context) error {
	evs, err := h.Alerts.AlertEvents(c.Request().Context(), 100)
	if err != nil {
		return err
	}
	type event struct {
		ID        int64         `json:"id"`
		Status    alert.Event   `json:"status"`
		RuleID    int64         `json:"rule_id"`
		Rule      alert.Kind    `json:"rule"`
		Subject   alert.Subject `json:"subject"`
		Summary   string        `json:"summary"`
		At        time.Time     `json:"at"`
		Silenced  bool          `json:"silenced"`
		Delivered int           `json:"delivered"`
		Waiting   int           `json:"waiting"`
		Failed    int           `json:"failed"`
	}
	out := make([]event, len(evs))
	for i, e := range evs {
		n := e.Notice
		out[i] = event{e.ID, n.Event, n.Rule.ID, n.Rule.Kind, n.Subject, n.Summary(), n.At.UTC(), e.Silenced, e.Delivered, e.Waiting, e.Failed}
	}
	return apiList(c, "events", out)
}
