package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"switchyard/routing/alert"
	"switchyard/store/rows"
)

// AlertStore is the alert storage the evaluator needs (store.Store).
type AlertStore interface {
	AlertRules(ctx context.Context) ([]alert.Rule, error)
	AlertStates(ctx context.Context) ([]alert.State, error)
	SaveAlertPass(ctx context.Context, ruleIDs []int64, states []alert.State, notices []alert.Notice, now time.Time) (int, error)
	DueAlertDeliveries(ctx context.Context, now time.Time, limit int) ([]rows.AlertDelivery, error)
	AlertDelivered(ctx context.Context, eventID, channelID int64, at time.Time) error
	AlertDeliveryFailed(ctx context.Context, eventID, channelID int64, msg string, next time.Time, giveUp bool) error
}

// AlertSource finds, for one rule, the subjects whose condition holds now.
type AlertSource interface {
	Findings(ctx context.Context, r alert.Rule) ([]alert.Finding, error)
}

// Alerter evaluates the alert rules and delivers their messages. It runs as
// the "alerts" job, so one worker at a time evaluates (the job's lease);
// states, events and deliveries live in PostgreSQL, so the next holder
// carries on where the last stopped.
type Alerter struct {
	Store  AlertStore
	Source AlertSource
	// Client posts to the webhooks; default a client with a 10 s timeout.
	Client *http.Client
	Log    *slog.Logger
}

// AlertsJob is the evaluation and delivery job (SWITCHYARD_ALERT_INTERVAL).
func (a *Alerter) Job(every time.Duration) Job {
	return Job{
		Name:        "alerts",
		Description: "Evaluates the alert rules (Settings → Alerts) and posts firing and resolved messages to the webhooks, retrying with back-off.",
		Every:       every,
		Timeout:     max(every*4, time.Minute),
		Run: func(ctx context.Context) (string, error) {
			now := time.Now()
			fired, resolved, perr := a.Pass(ctx, now)
			sent, failed, derr := a.Deliver(ctx, time.Now())
			return fmt.Sprintf("%d fired, %d resolved; %d message(s) sent, %d failed", fired, resolved, sent, failed), errors.Join(perr, derr)
		},
	}
}

// Pass evaluates every rule once and stores the outcome. A rule whose
// findings cannot be read keeps its states as they were (an error is not
// a resolution).
func (a *Alerter) Pass(ctx context.Context, now time.Time) (fired, resolved int, err error) {
	rules, err := a.Store.AlertRules(ctx)
	if err != nil {
		return 0, 0, err
	}
	prev, err := a.Store.AlertStates(ctx)
	if err != nil {
		return 0, 0, err
	}
	byRule := map[int64][]alert.State{}
	for _, s := range prev {
		byRule[s.RuleID] = append(byRule[s.RuleID], s)
	}
	var ids []int64
	var states []alert.State
	var notices []alert.Notice
	var errs []error
	for _, r := range rules {
		var found []alert.Finding
		if r.Enabled {
			f, ferr := a.Source.Findings(ctx, r)
			if ferr != nil {
				errs = append(errs, fmt.Errorf("rule %d (%s): %w", r.ID, r.Kind, ferr))
				continue
			}
			found = f
		}
		next, ns := alert.Step(r, byRule[r.ID], found, now)
		ids, states, notices = append(ids, r.ID), append(states, next...), append(notices, ns...)
	}
	if _, err := a.Store.SaveAlertPass(ctx, ids, states, notices, now); err != nil {
		return 0, 0, errors.Join(append(errs, err)...)
	}
	for _, n := range notices {
		if n.Event == alert.EventFiring {
			fired++
		} else {
			resolved++
		}
	}
	return fired, resolved, errors.Join(errs...)
}

// Deliver posts the deliveries due at now; a failure waits alert.Backoff
// before its next attempt and is given up after alert.MaxAttempts.
func (a *Alerter) Deliver(ctx context.Context, now time.Time) (sent, failed int, err error) {
	due, err := a.Store.DueAlertDeliveries(ctx, now, 100)
	if err != nil {
		return 0, 0, err
	}
	for _, d := range due {
		if ctx.Err() != nil {
			return sent, failed, ctx.Err()
		}
		perr := Post(ctx, a.client(), d.Shape, d.URL, d.Notice)
		if perr == nil {
			sent++
			err = errors.Join(err, a.Store.AlertDelivered(ctx, d.EventID, d.ChannelID, time.Now()))
			continue
		}
		failed++
		n := d.Attempts + 1
		giveUp := n >= alert.MaxAttempts
		if a.Log != nil {
			a.Log.Warn("alerts: webhook delivery failed", "channel", d.ChannelID, "event", d.EventID, "attempt", n, "gave_up", giveUp, "err", perr)
		}
		err = errors.Join(err, a.Store.AlertDeliveryFailed(ctx, d.EventID, d.ChannelID, perr.Error(), now.Add(alert.Backoff(n)), giveUp))
	}
	return sent, failed, err
}

func (a *Alerter) client() *http.Client {
	if a.Client != nil {
		return a.Client
	}
	return &http.Client{Timeout: 10 * time.Second}
}

// ErrWebhookStatus is a webhook that answered with a status other than 2xx.
var ErrWebhookStatus = errors.New("webhook answered")

// Post sends one notice to a webhook in its shape. Its errors never carry
// the URL (a Slack URL is a secret).
func Post(ctx context.Context, c *http.Client, shape alert.Shape, url string, n alert.Notice) error {
	body, err := n.Body(shape)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return errors.New("invalid webhook URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "switchyard-alerts")
	res, err := c.Do(req)
	if err != nil {
		var uerr interface{ Unwrap() error }
		if errors.As(err, &uerr) {
			return fmt.Errorf("webhook unreachable: %w", uerr.Unwrap())
		}
		return errors.New("webhook unreachable")
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%w %d", ErrWebhookStatus, res.StatusCode)
	}
	return nil
}
