// Package lastgood keeps the last configuration version an instance loaded
// — snapshot, provider key secrets and caller key hashes — outside
// PostgreSQL: in a file on local disk and, where Redis answers, in Redis. An
// instance that starts while PostgreSQL is unreachable serves it.
//
// The copy is sealed with the installation's secret key (AES-256-GCM, the
// same sealer as provider keys in PostgreSQL): provider secrets are never
// on disk or in Redis in the clear, and a damaged or tampered copy fails
// to open instead of loading half a configuration. The file is replaced
// atomically (write, fsync, rename, fsync the directory).
package lastgood

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/routing/config"
	"switchyard/routing/live"
	"switchyard/store/secrets"
)

// FileName is the cache file inside the cache directory.
const FileName = "config.sealed"

// additional binds sealed copies to their purpose: a sealed provider key
// cannot be passed off as a configuration, nor the reverse.
var additional = []byte("switchyard/lastgood/v1")

// Cache is a live.Cache on disk and in Redis.
type Cache struct {
	dir    string
	rdb    redis.UniversalClient // may be nil
	key    string
	sealer *secrets.Sealer
	log    *slog.Logger
}

// New returns a Cache writing to dir (created if missing) and, when rdb
// is not nil, to the Redis key <prefix>:lastgood.
func New(dir string, rdb redis.UniversalClient, prefix string, sealer *secrets.Sealer, log *slog.Logger) (*Cache, error) {
	if dir == "" {
		return nil, errors.New("lastgood: a cache directory is required")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("lastgood: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	return &Cache{dir: dir, rdb: rdb, key: prefix + ":lastgood", sealer: sealer, log: log}, nil
}

// Path is the cache file.
func (c *Cache) Path() string { return filepath.Join(c.dir, FileName) }

// wire is the sealed payload.
type wire struct {
	Version            int64                         `json:"version"`
	Snapshot           []byte                        `json:"snapshot"`
	ProviderKeySecrets map[int64]string              `json:"provider_key_secrets"`
	HeaderSecrets      map[int64]config.HeaderSecret `json:"provider_header_secrets,omitempty"`
	CallerKeys         map[string]string             `json:"caller_key_owners"` // hex of the key hash → caller name
	SavedAt            time.Time                     `json:"saved_at"`
}

// Save writes c to disk, then to Redis. A disk failure is returned; a Redis
// failure is logged (the disk copy is what a restart on this machine needs).
func (c *Cache) Save(ctx context.Context, v live.Cached) error {
	w := wire{Version: v.Version, Snapshot: v.Snapshot, ProviderKeySecrets: v.ProviderKeySecrets, HeaderSecrets: v.ProviderHeaderSecrets, CallerKeys: make(map[string]string, len(v.CallerKeys)), SavedAt: v.SavedAt}
	for h, name := range v.CallerKeys {
		w.CallerKeys[hex.EncodeToString(h[:])] = name
	}
	plain, err := json.Marshal(w)
	if err != nil {
		return fmt.Errorf("lastgood: encode: %w", err)
	}
	sealed := c.sealer.Seal(string(plain), additional)
	if err := writeAtomic(c.dir, FileName, sealed); err != nil {
		return err
	}
	if c.rdb != nil {
		if err := c.rdb.Set(ctx, c.key, sealed, 0).Err(); err != nil {
			c.log.Warn("the last-known-good configuration is cached on disk only: Redis did not take it", "version", v.Version, "err", err)
		}
	}
	return nil
}

// Load returns the newest intact copy of the disk file and the Redis key.
// A copy that does not open (damaged, or sealed with another secret key)
// is logged and skipped.
func (c *Cache) Load(ctx context.Context) (live.Cached, error) {
	var best *live.Cached
	consider := func(where string, sealed []byte) {
		v, err := c.open(sealed)
		if err != nil {
			c.log.Error("a cached configuration copy is unusable", "where", where, "err", err)
			return
		}
		if best == nil || v.Version > best.Version {
			best = &v
		}
	}
	if b, err := os.ReadFile(c.Path()); err == nil {
		consider(c.Path(), b)
	} else if !errors.Is(err, os.ErrNotExist) {
		c.log.Error("cannot read the cached configuration", "path", c.Path(), "err", err)
	}
	if c.rdb != nil {
		if b, err := c.rdb.Get(ctx, c.key).Bytes(); err == nil {
			consider("redis "+c.key, b)
		} else if !errors.Is(err, redis.Nil) {
			c.log.Warn("cannot read the cached configuration from Redis", "err", err)
		}
	}
	if best == nil {
		return live.Cached{}, live.ErrNoCache
	}
	return *best, nil
}

func (c *Cache) open(sealed []byte) (live.Cached, error) {
	plain, err := c.sealer.Open(sealed, additional)
	if err != nil {
		return live.Cached{}, errors.New("it does not open: damaged, or sealed with another SWITCHYARD_SECRET_KEY")
	}
	var w wire
	if err := json.Unmarshal([]byte(plain), &w); err != nil {
		return live.Cached{}, fmt.Errorf("it does not decode: %w", err)
	}
	v := live.Cached{Version: w.Version, Snapshot: w.Snapshot, ProviderKeySecrets: w.ProviderKeySecrets, ProviderHeaderSecrets: w.HeaderSecrets, CallerKeys: make(map[[32]byte]string, len(w.CallerKeys)), SavedAt: w.SavedAt}
	for s, id := range w.CallerKeys {
		b, err := hex.DecodeString(s)
		if err != nil || len(b) != 32 {
			return live.Cached{}, errors.New("it holds a malformed caller key hash")
		}
		v.CallerKeys[[32]byte(b)] = id
	}
	return v, nil
}

// writeAtomic replaces dir/name with data so a crash leaves the old file or
// the new one, never a mix.
func writeAtomic(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, name+".tmp-*")
	if err != nil {
		return fmt.Errorf("lastgood: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename this fails harmlessly
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("lastgood: write: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("lastgood: sync: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("lastgood: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("lastgood: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
