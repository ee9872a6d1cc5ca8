package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"

	"switchyard/routing/alert"
	"switchyard/store/rows"
)

// ruleRow is an alert_rules row.
type ruleRow struct {
	ID            int64        `db:"id"`
	Kind          string       `db:"kind"`
	Params        []byte       `db:"params"`
	ForSeconds    int          `db:"for_seconds"`
	Enabled       bool         `db:"enabled"`
	SilencedUntil sql.NullTime `db:"silenced_until"`
}

func (r ruleRow) rule() alert.Rule {
	out := alert.Rule{ID: r.ID, Kind: alert.Kind(r.Kind), For: time.Duration(r.ForSeconds) * time.Second, Enabled: r.Enabled}
	_ = json.Unmarshal(r.Params, &out.Params)
	if r.SilencedUntil.Valid {
		out.SilencedUntil = r.SilencedUntil.Time
	}
	return out
}

// AlertRules returns every alert rule, in id order.
func (s *Store) AlertRules(ctx context.Context) ([]alert.Rule, error) {
	var rs []ruleRow
	if err := s.db.SelectContext(ctx, &rs, `SELECT id, kind, params, for_seconds, enabled, silenced_until FROM alert_rules ORDER BY id`); err != nil {
		return nil, fmt.Errorf("store: alert rules: %w", err)
	}
	out := make([]alert.Rule, len(rs))
	for i, r := range rs {
		out[i] = r.rule()
	}
	return out, nil
}

// UpdateAlertRule stores a rule's parameters, For, enabled flag and silence
// (its kind stays). The rule is validated first.
func (s *Store) UpdateAlertRule(ctx context.Context, r alert.Rule) error {
	var kind string
	if err := s.db.GetContext(ctx, &kind, `SELECT kind FROM alert_rules WHERE id = $1`, r.ID); err != nil {
		return fmt.Errorf("store: update alert rule %d: %w", r.ID, notFound(err))
	}
	r.Kind = alert.Kind(kind)
	if err := r.Validate(); err != nil {
		return fmt.Errorf("store: update alert rule %d: %w", r.ID, err)
	}
	params, _ := json.Marshal(r.Params)
	var silenced any
	if !r.SilencedUntil.IsZero() {
		silenced = r.SilencedUntil
	}
	res, err := s.db.ExecContext(ctx, `UPDATE alert_rules SET params = $2, for_seconds = $3, enabled = $4, silenced_until = $5, updated_at = now() WHERE id = $1`,
		r.ID, string(params), int(r.For/time.Second), r.Enabled, silenced)
	if err := rowsAffected(res, err); err != nil {
		return fmt.Errorf("store: update alert rule %d: %w", r.ID, err)
	}
	return nil
}

// AlertChannels returns the webhook channels, URLs sealed.
func (s *Store) AlertChannels(ctx context.Context) ([]rows.AlertChannel, error) {
	var out []rows.AlertChannel
	if err := s.db.SelectContext(ctx, &out, `SELECT id, name, shape, url_hint, enabled, created_at FROM alert_channels ORDER BY id`); err != nil {
		return nil, fmt.Errorf("store: alert channels: %w", err)
	}
	return out, nil
}

func channelAD(id int64) []byte { return []byte("alert_channel:" + strconv.FormatInt(id, 10)) }

// URLHint is a webhook URL's scheme and host: what the console may show of
// a secret URL.
func URLHint(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(invalid URL)"
	}
	return u.Scheme + "://" + u.Host + "/…"
}

// CreateAlertChannel adds a webhook channel; its URL is sealed.
func (s *Store) CreateAlertChannel(ctx context.Context, name string, shape alert.Shape, rawURL string) (int64, error) {
	var id int64
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		if err := tx.GetContext(ctx, &id, `SELECT nextval(pg_get_serial_sequence('alert_channels', 'id'))`); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO alert_channels (id, name, shape, url_sealed, url_hint) VALUES ($1, $2, $3, $4, $5)`,
			id, name, string(shape), s.sealer.Seal(rawURL, channelAD(id)), URLHint(rawURL))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: create alert channel %s: %w", name, err)
	}
	return id, nil
}

// DeleteAlertChannel removes a channel and its pending deliveries.
func (s *Store) DeleteAlertChannel(ctx context.Context, id int64) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM alert_channels WHERE id = $1`, id)
	if err := rowsAffected(res, err); err != nil {
		return fmt.Errorf("store: delete alert channel %d: %w", id, err)
	}
	return nil
}

// AlertChannelTarget is a channel's shape and opened URL (for a test send).
func (s *Store) AlertChannelTarget(ctx context.Context, id int64) (alert.Shape, string, error) {
	var r struct {
		Shape  string `db:"shape"`
		Sealed []byte `db:"url_sealed"`
	}
	if err := s.db.GetContext(ctx, &r, `SELECT shape, url_sealed FROM alert_channels WHERE id = $1`, id); err != nil {
		return "", "", fmt.Errorf("store: alert channel %d: %w", id, notFound(err))
	}
	u, err := s.sealer.Open(r.Sealed, channelAD(id))
	if err != nil {
		return "", "", fmt.Errorf("store: alert channel %d: cannot open its URL", id)
	}
	return alert.Shape(r.Shape), u, nil
}
