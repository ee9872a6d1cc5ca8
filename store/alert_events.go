package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"switchyard/routing/alert"
	"switchyard/store/rows"
)

type stateRow struct {
	RuleID  int64        `db:"rule_id"`
	Subject []byte       `db:"subject"`
	Status  string       `db:"status"`
	Since   time.Time    `db:"since"`
	FiredAt sql.NullTime `db:"fired_at"`
	Value   float64      `db:"value"`
}

func (r stateRow) state() alert.State {
	st := alert.State{RuleID: r.RuleID, Status: alert.Status(r.Status), Since: r.Since, Value: r.Value}
	_ = json.Unmarshal(r.Subject, &st.Subject)
	if r.FiredAt.Valid {
		st.FiredAt = r.FiredAt.Time
	}
	return st
}

// AlertStates returns every pending and firing alert.
func (s *Store) AlertStates(ctx context.Context) ([]alert.State, error) {
	var rs []stateRow
	if err := s.db.SelectContext(ctx, &rs, `SELECT rule_id, subject, status, since, fired_at, value FROM alert_states ORDER BY rule_id, skey`); err != nil {
		return nil, fmt.Errorf("store: alert states: %w", err)
	}
	out := make([]alert.State, len(rs))
	for i, r := range rs {
		out[i] = r.state()
	}
	return out, nil
}

// FiringAlerts returns the alerts firing now with their rules, oldest first.
func (s *Store) FiringAlerts(ctx context.Context) ([]rows.FiringAlert, error) {
	rules, err := s.AlertRules(ctx)
	if err != nil {
		return nil, err
	}
	byID := map[int64]alert.Rule{}
	for _, r := range rules {
		byID[r.ID] = r
	}
	var rs []stateRow
	if err := s.db.SelectContext(ctx, &rs, `SELECT rule_id, subject, status, since, fired_at, value FROM alert_states WHERE status = 'firing' ORDER BY fired_at, rule_id, skey`); err != nil {
		return nil, fmt.Errorf("store: firing alerts: %w", err)
	}
	out := make([]rows.FiringAlert, 0, len(rs))
	for _, r := range rs {
		out = append(out, rows.FiringAlert{Rule: byID[r.RuleID], State: r.state()})
	}
	return out, nil
}

// SaveAlertPass stores one evaluation: the states of the rules evaluated
// replace their previous ones, and each notice becomes an event (once: a
// notice whose dedup key is stored already is skipped) with a delivery to
// every enabled channel unless its rule is silenced. It returns how many
// events were new.
func (s *Store) SaveAlertPass(ctx context.Context, ruleIDs []int64, states []alert.State, notices []alert.Notice, now time.Time) (int, error) {
	var added int
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM alert_states WHERE rule_id = ANY($1)`, pq.Array(ruleIDs)); err != nil {
			return err
		}
		for _, st := range states {
			subj, _ := json.Marshal(st.Subject)
			var fired any
			if !st.FiredAt.IsZero() {
				fired = st.FiredAt
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO alert_states (rule_id, subject, skey, status, since, fired_at, value) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
				st.RuleID, string(subj), st.Subject.Key(), string(st.Status), st.Since, fired, st.Value); err != nil {
				return err
			}
		}
		for _, n := range notices {
			ok, err := insertEvent(ctx, tx, n, now)
			if err != nil {
				return err
			}
			if ok {
				added++
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: save alert pass: %w", err)
	}
	return added, nil
}

func insertEvent(ctx context.Context, tx *sqlx.Tx, n alert.Notice, now time.Time) (bool, error) {
	subj, _ := json.Marshal(n.Subject)
	silenced := n.Rule.Silenced(now)
	var id int64
	err := tx.GetContext(ctx, &id, `
		INSERT INTO alert_events (dedup_key, rule_id, event, subject, value, fired_at, at, silenced) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (dedup_key) DO NOTHING RETURNING id`,
		n.DedupKey(), n.Rule.ID, string(n.Event), string(subj), n.Value, n.FiredAt, n.At, silenced)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil || silenced {
		return err == nil, err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO alert_deliveries (event_id, channel_id, next_at) SELECT $1, id, $2 FROM alert_channels WHERE enabled`, id, now)
	return true, err
}

type eventRow struct {
	ID       int64     `db:"id"`
	RuleID   int64     `db:"rule_id"`
	Event    string    `db:"event"`
	Subject  []byte    `db:"subject"`
	Value    float64   `db:"value"`
	FiredAt  time.Time `db:"fired_at"`
	At       time.Time `db:"at"`
	Silenced bool      `db:"silenced"`
}

func (r eventRow) notice(rule alert.Rule) alert.Notice {
	n := alert.Notice{Rule: rule, Event: alert.Event(r.Event), Value: r.Value, FiredAt: r.FiredAt, At: r.At}
	_ = json.Unmarshal(r.Subject, &n.Subject)
	return n
}

// AlertEvents returns the newest events with their deliveries' outcomes.
func (s *Store) AlertEvents(ctx context.Context, limit int) ([]rows.AlertEvent, error) {
	var rs []struct {
		eventRow
		Delivered int `db:"delivered"`
		Waiting   int `db:"waiting"`
		Failed    int `db:"failed"`
	}
	err := s.db.SelectContext(ctx, &rs, `
		SELECT e.id, e.rule_id, e.event, e.subject, e.value, e.fired_at, e.at, e.silenced,
			count(d.*) FILTER (WHERE d.delivered_at IS NOT NULL) AS delivered,
			count(d.*) FILTER (WHERE d.delivered_at IS NULL AND NOT d.gave_up) AS waiting,
			count(d.*) FILTER (WHERE d.gave_up) AS failed
		FROM alert_events e LEFT JOIN alert_deliveries d ON d.event_id = e.id
		GROUP BY e.id ORDER BY e.at DESC, e.id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("store: alert events: %w", err)
	}
	rules, err := s.rulesByID(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]rows.AlertEvent, len(rs))
	for i, r := range rs {
		out[i] = rows.AlertEvent{ID: r.ID, Notice: r.notice(rules[r.RuleID]), Silenced: r.Silenced, Delivered: r.Delivered, Waiting: r.Waiting, Failed: r.Failed}
	}
	return out, nil
}

func (s *Store) rulesByID(ctx context.Context) (map[int64]alert.Rule, error) {
	rules, err := s.AlertRules(ctx)
	if err != nil {
		return nil, err
	}
	m := make(map[int64]alert.Rule, len(rules))
	for _, r := range rules {
		m[r.ID] = r
	}
	return m, nil
}

// DueAlertDeliveries returns up to limit deliveries due at now, oldest
// first, with their channels' opened URLs.
func (s *Store) DueAlertDeliveries(ctx context.Context, now time.Time, limit int) ([]rows.AlertDelivery, error) {
	var rs []struct {
		eventRow
		ChannelID int64  `db:"channel_id"`
		Attempts  int    `db:"attempts"`
		Shape     string `db:"shape"`
		Sealed    []byte `db:"url_sealed"`
	}
	err := s.db.SelectContext(ctx, &rs, `
		SELECT e.id, e.rule_id, e.event, e.subject, e.value, e.fired_at, e.at, e.silenced, d.channel_id, d.attempts, c.shape, c.url_sealed
		FROM alert_deliveries d JOIN alert_events e ON e.id = d.event_id JOIN alert_channels c ON c.id = d.channel_id
		WHERE d.delivered_at IS NULL AND NOT d.gave_up AND d.next_at <= $1
		ORDER BY d.next_at, e.id LIMIT $2`, now, limit)
	if err != nil {
		return nil, fmt.Errorf("store: due alert deliveries: %w", err)
	}
	rules, err := s.rulesByID(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]rows.AlertDelivery, 0, len(rs))
	for _, r := range rs {
		u, err := s.sealer.Open(r.Sealed, channelAD(r.ChannelID))
		if err != nil {
			return nil, fmt.Errorf("store: alert channel %d: cannot open its URL", r.ChannelID)
		}
		out = append(out, rows.AlertDelivery{EventID: r.ID, ChannelID: r.ChannelID, Attempts: r.Attempts,
			Shape: alert.Shape(r.Shape), URL: u, Notice: r.notice(rules[r.RuleID])})
	}
	return out, nil
}

// AlertDelivered records a delivery that succeeded.
func (s *Store) AlertDelivered(ctx context.Context, eventID, channelID int64, at time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE alert_deliveries SET delivered_at = $3, attempts = attempts + 1, last_error = '' WHERE event_id = $1 AND channel_id = $2`,
		eventID, channelID, at)
	if err != nil {
		return fmt.Errorf("store: alert delivered %d/%d: %w", eventID, channelID, err)
	}
	return nil
}

// AlertDeliveryFailed records a failed attempt: the next is at next, or
// none when giveUp.
func (s *Store) AlertDeliveryFailed(ctx context.Context, eventID, channelID int64, msg string, next time.Time, giveUp bool) error {
	if len(msg) > 500 {
		msg = msg[:500]
	}
	_, err := s.db.ExecContext(ctx, `UPDATE alert_deliveries SET attempts = attempts + 1, last_error = $3, next_at = $4, gave_up = $5 WHERE event_id = $1 AND channel_id = $2`,
		eventID, channelID, msg, next, giveUp)
	if err != nil {
		return fmt.Errorf("store: alert delivery failed %d/%d: %w", eventID, channelID, err)
	}
	return nil
}
