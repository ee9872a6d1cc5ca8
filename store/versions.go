package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"

	"switchyard/routing/config"
	"switchyard/routing/live"
	"switchyard/store/rows"
)

// NotifyChannel is the PostgreSQL channel every instance listens on. The
// payload says what changed, as a live.Notice.
const NotifyChannel = "switchyard_config"

// Publish stores the draft as a new immutable version. It locks the draft
// for the duration, so concurrent publishes get distinct, consecutive numbers
// and an edit made meanwhile waits and lands in the next draft, never lost.
func (s *Store) Publish(ctx context.Context, in PublishInput) (PublishOutcome, error) {
	var out PublishOutcome
	if strings.TrimSpace(in.Message) == "" {
		return out, (config.FieldErrors{"message": "a publish needs a message saying why"}).Err()
	}
	if len(in.Message) > 2000 {
		return out, (config.FieldErrors{"message": "must be at most 2000 characters"}).Err()
	}
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		var rev int64
		if err := tx.GetContext(ctx, &rev, `SELECT revision FROM draft_meta FOR UPDATE`); err != nil {
			return err
		}
		if in.ExpectedRevision != nil && *in.ExpectedRevision != rev {
			return ErrDraftChanged
		}
		var latest Version
		err := tx.GetContext(ctx, &latest, `SELECT number, author, snapshot, checks FROM config_versions ORDER BY number DESC LIMIT 1`)
		if err != nil && !errors.Is(notFound(err), ErrNotFound) {
			return err
		}
		var rollbackOf *int64
		var old string
		var oldSnap config.Snapshot
		if in.RollbackTo != 0 {
			if old, oldSnap, out.Notes, err = restoreVersion(ctx, tx, in.RollbackTo); err != nil {
				return err
			}
			rollbackOf = &in.RollbackTo
			if err := tx.GetContext(ctx, &rev, `SELECT revision FROM draft_meta`); err != nil {
				return err
			}
		}
		snap, err := loadSnapshot(ctx, tx)
		if err != nil {
			return err
		}
		result, err := publishChecks(in, snap, latest)
		if err != nil {
			return err
		}
		// A rollback that restored the old version exactly (no key left out)
		// publishes its text as it is; the same snapshot encodes to the same
		// bytes, so this only saves encoding it again.
		var text []byte
		if rollbackOf != nil && reflect.DeepEqual(snap, oldSnap) {
			text = []byte(old)
		} else if text, err = config.Encode(snap); err != nil {
			return err
		}
		liveSnap, liveText := rows.ConfigOnly(latest.Snapshot)
		if rollbackOf == nil && latest.Number > 0 && bytes.Equal(text, liveText) {
			return ErrNothingToPublish
		}
		if err := followRenames(ctx, tx, liveSnap, snap); err != nil {
			return err
		}
		checks, _ := json.Marshal(result)
		v := Version{Number: latest.Number + 1, Author: in.Author, Message: in.Message, Snapshot: string(text), Checks: checks, RollbackOf: rollbackOf, DraftRevision: rev}
		if err := tx.GetContext(ctx, &v.CreatedAt, `
			INSERT INTO config_versions (number, author, message, snapshot, checks, rollback_of, draft_revision)
			VALUES ($1,$2,$3,$4,$5,$6,$7) RETURNING created_at`,
			v.Number, v.Author, v.Message, v.Snapshot, string(v.Checks), v.RollbackOf, v.DraftRevision); err != nil {
			return fmt.Errorf("store: insert version %d: %w", v.Number, err)
		}
		out.Version = v
		_, err = tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, NotifyChannel, live.VersionNotice(v.Number).Payload())
		return err
	})
	return out, err
}

// restoreVersion makes the draft version n again (a rollback) and returns
// n's text, its snapshot and what the replace left out.
func restoreVersion(ctx context.Context, tx *sqlx.Tx, n int64) (string, config.Snapshot, []ReplaceNote, error) {
	var old string
	if err := tx.GetContext(ctx, &old, `SELECT snapshot FROM config_versions WHERE number=$1`, n); err != nil {
		return "", config.Snapshot{}, nil, fmt.Errorf("store: version %d: %w", n, notFound(err))
	}
	snap, err := config.Decode([]byte(old))
	if err != nil {
		return "", config.Snapshot{}, nil, fmt.Errorf("store: version %d does not decode: %w", n, err)
	}
	notes, err := replaceDraft(ctx, tx, snap)
	if err != nil {
		return "", config.Snapshot{}, nil, err
	}
	return old, snap, notes, nil
}

// publishChecks runs the publish checks on snap: a finding neither
// acknowledged now nor standing from the live version blocks the publish.
func publishChecks(in PublishInput, snap config.Snapshot, latest Version) (config.Result, error) {
	result := in.Check(snap)
	standing := latest.Standing()
	given := append(slices.Clone(in.Acknowledge), config.StandingKeys(standing)...)
	if blocking := result.Unacknowledged(given); len(blocking) > 0 {
		return result, &ChecksFailedError{Result: result, Blocking: blocking}
	}
	var err error
	if result.Acknowledged, err = result.Acknowledge(in.Acknowledge); err != nil {
		return result, err
	}
	result.Acknowledged = append(result.Acknowledged, result.Carry(standing, in.Acknowledge)...)
	return result, nil
}

// Versions lists versions, newest first, without their snapshots.
func (s *Store) Versions(ctx context.Context, limit int) ([]Version, error) {
	var out []Version
	err := s.db.SelectContext(ctx, &out, `
		SELECT number, author, created_at, message, '' AS snapshot, checks, rollback_of, draft_revision
		FROM config_versions ORDER BY number DESC LIMIT $1`, limit)
	return out, err
}

// Version returns one version with its snapshot.
func (s *Store) Version(ctx context.Context, number int64) (Version, error) {
	var v Version
	err := s.db.GetContext(ctx, &v, `SELECT number, author, created_at, message, snapshot, checks, rollback_of, draft_revision FROM config_versions WHERE number=$1`, number)
	if err != nil {
		return v, fmt.Errorf("store: version %d: %w", number, notFound(err))
	}
	return v, nil
}

// LatestVersion returns the live (highest) version, or ErrNotFound before the
// first publish.
func (s *Store) LatestVersion(ctx context.Context) (Version, error) {
	var v Version
	err := s.db.GetContext(ctx, &v, `SELECT number, author, created_at, message, snapshot, checks, rollback_of, draft_revision FROM config_versions ORDER BY number DESC LIMIT 1`)
	if err != nil {
		return v, fmt.Errorf("store: latest version: %w", notFound(err))
	}
	return v, nil
}

// LiveSnapshot is the newest published version's number and canonical
// snapshot: what every instance compiles and serves.
func (s *Store) LiveSnapshot(ctx context.Context) (int64, []byte, error) {
	v, err := s.LatestVersion(ctx)
	return v.Number, []byte(v.Snapshot), err
}

// LatestVersionNumber returns the live version number, 0 before the first publish.
func (s *Store) LatestVersionNumber(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.GetContext(ctx, &n, `SELECT coalesce(max(number), 0) FROM config_versions`)
	return n, err
}

// ConfigEpoch is the configuration epoch: it grows with every publish and
// every caller-key change (migration 0020's triggers), never goes back.
func (s *Store) ConfigEpoch(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.GetContext(ctx, &n, `SELECT epoch FROM config_epoch`)
	return n, err
}

// notify tells every instance that something live changed.
func (s *Store) notify(ctx context.Context, n live.Notice) error {
	_, err := s.db.ExecContext(ctx, `SELECT pg_notify($1, $2)`, NotifyChannel, n.Payload())
	return err
}

// DraftState tells whether the draft differs from the live version.
func (s *Store) DraftState(ctx context.Context) (live int64, differs bool, err error) {
	v, err := s.LatestVersion(ctx)
	if errors.Is(err, ErrNotFound) {
		return 0, true, nil
	}
	if err != nil {
		return 0, false, err
	}
	rev, err := s.DraftRevision(ctx)
	if err != nil {
		return v.Number, false, err
	}
	if rev == v.DraftRevision {
		return v.Number, false, nil
	}
	// The revision moved; the content may still be the same (an edit undone).
	snap, _, err := s.Draft(ctx)
	if err != nil {
		return v.Number, false, err
	}
	text, err := config.Encode(snap)
	if err != nil {
		return v.Number, false, err
	}
	_, liveText := rows.ConfigOnly(v.Snapshot)
	return v.Number, !bytes.Equal(text, liveText), nil
}
