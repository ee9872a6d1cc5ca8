package store

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/lib/pq"
)

// UseLog keeps, in memory, the last use of each caller key and admin API
// token on this instance, and writes them to PostgreSQL in one statement
// per kind every interval (Run) and at shutdown (Flush): never a database
// write per request. A use older than the one stored never replaces it.
type UseLog struct {
	s      *Store
	mu     sync.Mutex
	keys   map[int64]use
	tokens map[int64]use
}

type use struct {
	at   time.Time
	addr string // as presented: host:port, split when flushed
}

// NewUseLog makes a use log that writes to s.
func (s *Store) NewUseLog() *UseLog {
	return &UseLog{s: s, keys: map[int64]use{}, tokens: map[int64]use{}}
}

// CallerKeyUsed records a caller key's use at at from addr.
func (u *UseLog) CallerKeyUsed(id int64, at time.Time, addr string) { u.record(&u.keys, id, at, addr) }

// AdminTokenUsed records an admin API token's use at at from addr.
func (u *UseLog) AdminTokenUsed(id int64, at time.Time, addr string) {
	u.record(&u.tokens, id, at, addr)
}

func (u *UseLog) record(m *map[int64]use, id int64, at time.Time, addr string) {
	if id == 0 {
		return // a key from a copy saved before keys had ids
	}
	u.mu.Lock()
	if prev, ok := (*m)[id]; !ok || at.After(prev.at) {
		(*m)[id] = use{at: at, addr: addr}
	}
	u.mu.Unlock()
}

// Flush writes the uses recorded since the last flush. On failure they
// are kept for the next one (a newer use recorded meanwhile wins).
func (u *UseLog) Flush(ctx context.Context) error {
	u.mu.Lock()
	keys, tokens := u.keys, u.tokens
	u.keys, u.tokens = map[int64]use{}, map[int64]use{}
	u.mu.Unlock()
	err := u.s.writeUses(ctx, `INSERT INTO caller_key_usage (key_id, last_used_at, last_used_addr)
		SELECT u.id, u.at, u.addr FROM unnest($1::bigint[], $2::timestamptz[], $3::text[]) AS u(id, at, addr)
		JOIN caller_keys k ON k.id = u.id
		ON CONFLICT (key_id) DO UPDATE SET last_used_at = excluded.last_used_at, last_used_addr = excluded.last_used_addr
		WHERE caller_key_usage.last_used_at < excluded.last_used_at`, keys)
	if err == nil {
		err = u.s.writeUses(ctx, `UPDATE admin_tokens t SET last_used_at = u.at, last_used_addr = u.addr
		FROM unnest($1::bigint[], $2::timestamptz[], $3::text[]) AS u(id, at, addr)
		WHERE t.id = u.id AND (t.last_used_at IS NULL OR t.last_used_at < u.at)`, tokens)
	}
	if err != nil {
		for id, x := range keys {
			u.record(&u.keys, id, x.at, x.addr)
		}
		for id, x := range tokens {
			u.record(&u.tokens, id, x.at, x.addr)
		}
		return fmt.Errorf("store: write key use: %w", err)
	}
	return nil
}

func (s *Store) writeUses(ctx context.Context, q string, m map[int64]use) error {
	if len(m) == 0 {
		return nil
	}
	ids, ats, addrs := make([]int64, 0, len(m)), make([]time.Time, 0, len(m)), make([]string, 0, len(m))
	for id, x := range m {
		ids, ats, addrs = append(ids, id), append(ats, x.at), append(addrs, hostOf(x.addr))
	}
	_, err := s.db.ExecContext(ctx, q, pq.Array(ids), pq.Array(ats), pq.Array(addrs))
	return err
}

func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// Run flushes every interval until ctx ends, then once more.
func (u *UseLog) Run(ctx context.Context, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := u.Flush(fctx); err != nil {
				log.Warn("last use of caller keys not written at shutdown", "err", err)
			}
			return
		case <-t.C:
			if err := u.Flush(ctx); err != nil {
				log.Warn("last use of caller keys not written; kept for the next flush", "err", err)
			}
		}
	}
}
