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
//
// Each copy carries the configuration epoch it was read at, and every save
// raises an epoch mark in Redis (<prefix>:lastgood:epoch, a separate key
// that only grows). A start from the cache checks the newest copy against
// that mark and PostgreSQL's epoch (live.Choose): a copy put back on disk
// is refused instead of bringing back a revoked caller key.
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
	mark   string // the epoch mark: the highest epoch any save reached
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
	return &Cache{dir: dir, rdb: rdb, key: prefix + ":lastgood", mark: prefix + ":lastgood:epoch", sealer: sealer, log: log}, nil
}

// Path is the cache file.
func (c *Cache) Path() string { return filepath.Join(c.dir, FileName) }

// wire is the sealed payload.
type wire struct {
	Version            int64                         `json:"version"`
	Epoch              int64                         `json:"epoch"`
	Snapshot           []byte                        `json:"snapshot"`
	ProviderKeySecrets map[int64]string              `json:"provider_key_secrets"`
	HeaderSecrets      map[int64]config.HeaderSecret `json:"provider_header_secrets,omitempty"`
	CallerKeys         map[string]config.LiveKey     `json:"caller_keys"` // hex of the key hash → key and its terms
	// OldCallerKeys is how copies saved before keys had terms held them:
	// hex of the key hash → caller name. Read, never written.
	OldCallerKeys map[string]string `json:"caller_key_owners,omitempty"`
	SavedAt       time.Time         `json:"saved_at"`
}

// Save writes c to disk, then to Redis. A disk failure is returned; a Redis
// failure is logged (the disk copy is what a restart on this machine needs).
func (c *Cache) Save(ctx context.Context, v live.Cached) error {
	w := wire{Version: v.Version, Epoch: v.Epoch, Snapshot: v.Snapshot, ProviderKeySecrets: v.ProviderKeySecrets, HeaderSecrets: v.ProviderHeaderSecrets, CallerKeys: make(map[string]config.LiveKey, len(v.CallerKeys)), SavedAt: v.SavedAt}
	for h, k := range v.CallerKeys {
		w.CallerKeys[hex.EncodeToString(h[:])] = k
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
		if err := raiseMark.Run(ctx, c.rdb, []string{c.mark}, v.Epoch).Err(); err != nil {
			c.log.Warn("the configuration epoch mark in Redis was not raised", "epoch", v.Epoch, "err", err)
		}
	}
	return nil
}

// raiseMark sets KEYS[1] to ARGV[1] unless it already holds more: the mark
// never goes back, whatever order instances save in.
var raiseMark = redis.NewScript(`
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local new = tonumber(ARGV[1])
if new > cur then redis.call('SET', KEYS[1], ARGV[1]) return new end
return cur`)

// Copies returns the disk copy and the Redis copy that exist (opened, or
// with why not) and the Redis witness: the higher of the epoch mark and
// the Redis copy's epoch, when Redis answers and holds either.
func (c *Cache) Copies(ctx context.Context) ([]live.Copy, []live.Witness) {
	var copies []live.Copy
	consider := func(where string, sealed []byte) live.Copy {
		v, err := c.open(sealed)
		if err != nil {
			c.log.Error("a cached configuration copy is unusable", "where", where, "err", err)
		}
		cp := live.Copy{Where: where, Cached: v, Err: err}
		copies = append(copies, cp)
		return cp
	}
	if b, err := os.ReadFile(c.Path()); err == nil {
		consider("disk "+c.Path(), b)
	} else if !errors.Is(err, os.ErrNotExist) {
		c.log.Error("cannot read the cached configuration", "path", c.Path(), "err", err)
		copies = append(copies, live.Copy{Where: "disk " + c.Path(), Err: err})
	}
	if c.rdb == nil {
		return copies, nil
	}
	witness, known := live.Witness{Name: "redis"}, false
	if b, err := c.rdb.Get(ctx, c.key).Bytes(); err == nil {
		if cp := consider("redis "+c.key, b); cp.Err == nil {
			witness.Epoch, known = cp.Cached.Epoch, true
		}
	} else if !errors.Is(err, redis.Nil) {
		c.log.Warn("cannot read the cached configuration from Redis", "err", err)
		return copies, nil
	}
	if n, err := c.rdb.Get(ctx, c.mark).Int64(); err == nil {
		witness.Epoch, known = max(witness.Epoch, n), true
	} else if !errors.Is(err, redis.Nil) {
		c.log.Warn("cannot read the configuration epoch mark from Redis", "err", err)
	}
	if !known {
		return copies, nil
	}
	return copies, []live.Witness{witness}
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
	v := live.Cached{Version: w.Version, Epoch: w.Epoch, Snapshot: w.Snapshot, ProviderKeySecrets: w.ProviderKeySecrets, ProviderHeaderSecrets: w.HeaderSecrets, CallerKeys: make(config.LiveKeys, len(w.CallerKeys)), SavedAt: w.SavedAt}
	if w.CallerKeys == nil {
		w.CallerKeys = map[string]config.LiveKey{}
	}
	for s, name := range w.OldCallerKeys {
		w.CallerKeys[s] = config.LiveKey{Caller: name}
	}
	for s, k := range w.CallerKeys {
		b, err := hex.DecodeString(s)
		if err != nil || len(b) != 32 {
			return live.Cached{}, errors.New("it holds a malformed caller key hash")
		}
		v.CallerKeys[[32]byte(b)] = k
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
