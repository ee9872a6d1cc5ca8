package settings

import (
	"strconv"
	"strings"
	"time"

	"switchyard/routing/alert"
	"switchyard/routing/config"
	"switchyard/views/components"
	"switchyard/views/layout"
)

// data-testid of Settings → Alerts: alerts-nowhere (no channel yet),
// alerts-rules, alert-rule-<id> (row, data-kind, data-enabled,
// data-silenced), alert-rule-form-<id>, alert-rule-save-<id>,
// alert-silence-<id>-<1h|4h|24h|off>, alert-silence-until-<id>,
// alerts-channels, alert-channel-<id>, alert-channel-test-<id>,
// alert-channel-delete-<id>, alert-channel-form, alert-channel-create,
// alerts-notice, alerts-error, alerts-events, alert-event-<id>
// (data-status), alerts-events-empty; field-<name>/error-<name>.

// AlertsPage is Settings → Alerts.
type AlertsPage struct {
	Page     layout.Page
	Rules    []alert.Rule
	Channels []AlertChannel
	Events   []AlertEvent
	Form     ChannelForm
	CSRF     string
	CanEdit  bool
	// Notice and Error report the last action (a test send).
	Notice, Error string
	Now           time.Time
}

// AlertChannel is one webhook channel; Hint is its URL's scheme and host.
type AlertChannel struct {
	ID         int64
	Name, Hint string
	Shape      alert.Shape
	CanTest    bool
}

// AlertEvent is one firing or resolution with its deliveries.
type AlertEvent struct {
	ID                         int64
	Notice                     alert.Notice
	Silenced                   bool
	Delivered, Waiting, Failed int
}

// ChannelForm is the add-a-webhook form.
type ChannelForm struct {
	Name, Shape, URL string
	Errors           config.FieldErrors
}

// uses reports whether kind reads the parameter.
func uses(k alert.Kind, param string) bool {
	switch param {
	case "percent":
		return k == alert.KindErrorRate || k == alert.KindBudget
	case "window_seconds":
		return k == alert.KindErrorRate || k == alert.KindLatencyP95 || k == alert.KindRetryBudget
	case "min_requests":
		return k == alert.KindErrorRate || k == alert.KindLatencyP95
	case "bound_ms":
		return k == alert.KindLatencyP95
	case "open_seconds":
		return k == alert.KindBreakerOpen
	case "within_days":
		return k == alert.KindKeyExpiring
	}
	return false
}

func paramValue(p alert.Params, param string) string {
	switch param {
	case "percent":
		return strconv.FormatFloat(p.Percent, 'f', -1, 64)
	case "window_seconds":
		return strconv.Itoa(p.WindowSeconds)
	case "min_requests":
		return strconv.Itoa(p.MinRequests)
	case "bound_ms":
		return strconv.FormatInt(p.BoundMS, 10)
	case "open_seconds":
		return strconv.Itoa(p.OpenSeconds)
	case "within_days":
		return strconv.Itoa(p.WithinDays)
	}
	return ""
}

var paramLabels = [][2]string{{"percent", "Percent"}, {"window_seconds", "Window (s)"}, {"min_requests", "Min. requests"},
	{"bound_ms", "Bound (ms)"}, {"open_seconds", "Open longer than (s)"}, {"within_days", "Within (days)"}}

// paramSummary is a rule's thresholds as text, for a role that cannot
// change them.
func paramSummary(r alert.Rule) string {
	var parts []string
	for _, pl := range paramLabels {
		if uses(r.Kind, pl[0]) {
			parts = append(parts, pl[1]+" "+paramValue(r.Params, pl[0]))
		}
	}
	parts = append(parts, "for "+forSeconds(r)+" s")
	if !r.Enabled {
		parts = append(parts, "off")
	}
	return strings.Join(parts, " · ")
}

func forSeconds(r alert.Rule) string { return strconv.Itoa(int(r.For / time.Second)) }

func silenceWords(r alert.Rule, now time.Time) string {
	if !r.Silenced(now) {
		return ""
	}
	return "silenced until " + components.When(r.SilencedUntil)
}

func ruleID(r alert.Rule) string { return strconv.FormatInt(r.ID, 10) }

func eventSubject(e AlertEvent) string {
	return e.Notice.Subject.Name
}

func deliveryWords(e AlertEvent) string {
	switch {
	case e.Silenced:
		return "silenced: not sent"
	case e.Delivered+e.Waiting+e.Failed == 0:
		return "no channel"
	}
	s := strconv.Itoa(e.Delivered) + " delivered"
	if e.Waiting > 0 {
		s += ", " + strconv.Itoa(e.Waiting) + " retrying"
	}
	if e.Failed > 0 {
		s += ", " + strconv.Itoa(e.Failed) + " given up"
	}
	return s
}

func boolWord(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
