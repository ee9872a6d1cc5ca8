package rows

import (
	"time"

	"switchyard/routing/alert"
)

// AlertChannel is a webhook channel as the console lists it: its URL stays
// sealed, Hint is the URL's scheme and host.
type AlertChannel struct {
	ID        int64       `db:"id"`
	Name      string      `db:"name"`
	Shape     alert.Shape `db:"shape"`
	Hint      string      `db:"url_hint"`
	Enabled   bool        `db:"enabled"`
	CreatedAt time.Time   `db:"created_at"`
}

// AlertEvent is one stored firing or resolution with how its deliveries
// stand.
type AlertEvent struct {
	ID     int64
	Notice alert.Notice
	// Silenced: the rule was silenced, so nothing was sent.
	Silenced bool
	// Delivered, Waiting and Failed count its deliveries by outcome.
	Delivered, Waiting, Failed int
}

// AlertDelivery is one event due to be posted to one channel, with the
// channel's opened URL.
type AlertDelivery struct {
	EventID, ChannelID int64
	Attempts           int
	Shape              alert.Shape
	URL                string
	Notice             alert.Notice
}

// FiringAlert is one alert firing now, with its rule.
type FiringAlert struct {
	Rule  alert.Rule
	State alert.State
}

// TierCalls is one route group × tier's calls over an alert window: how
// many counted, the p95 latency, and the failures by cause.
type TierCalls struct {
	Group, Tier string
	Total       int64
	P95MS       float64
	Causes      map[string]int64
}
