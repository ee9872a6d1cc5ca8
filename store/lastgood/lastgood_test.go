package lastgood

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"switchyard/routing/config"
	"switchyard/routing/live"
	"switchyard/store/secrets"
	"switchyard/store/storetest"
)

func sealer(t *testing.T, hexKey string) *secrets.Sealer {
	t.Helper()
	k, err := secrets.ParseKey(hexKey)
	if err != nil {
		t.Fatal(err)
	}
	s, err := secrets.NewSealer(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// load is what a start from the cache serves, witnessed or not.
func load(ctx context.Context, c *Cache) (live.Cached, error) {
	copies, witnesses := c.Copies(ctx)
	p, err := live.Choose(copies, witnesses, true)
	return p.Cached, err
}

func sample(version int64) live.Cached {
	var h [32]byte
	h[0], h[31] = 7, byte(version)
	return live.Cached{
		Version:               version,
		Epoch:                 version * 10,
		Snapshot:              []byte(`{"providers":[]}`),
		ProviderKeySecrets:    map[int64]string{3: "sk-live-secret-value"},
		ProviderHeaderSecrets: map[int64]config.HeaderSecret{9: {ProviderID: 1, Value: "org-secret-header"}},
		CallerKeys:            config.LiveKeys{h: {ID: 4, Caller: "app", ExpiresAt: time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)}},
		SavedAt:               time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC),
	}
}

func TestSaveLoadRoundTripSealedOnDiskAndInRedis(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := storetest.Redis(t, "lastgood")
	c, err := New(t.TempDir(), rdb, prefix, sealer(t, storetest.TestKey), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := load(ctx, c); !errors.Is(err, live.ErrNoCache) {
		t.Fatalf("empty cache: got %v, want ErrNoCache", err)
	}
	want := sample(5)
	if err := c.Save(ctx, want); err != nil {
		t.Fatal(err)
	}
	disk, _ := os.ReadFile(c.Path())
	inRedis, _ := rdb.Get(ctx, prefix+":lastgood").Bytes()
	for where, b := range map[string][]byte{"disk": disk, "redis": inRedis} {
		if len(b) == 0 {
			t.Fatalf("nothing cached in %s", where)
		}
		if strings.Contains(string(b), "sk-live-secret-value") || strings.Contains(string(b), "org-secret-header") || strings.Contains(string(b), "providers") {
			t.Errorf("the %s copy is not sealed", where)
		}
	}
	got, err := load(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 5 || string(got.Snapshot) != string(want.Snapshot) || got.ProviderKeySecrets[3] != "sk-live-secret-value" || got.ProviderHeaderSecrets[9].Value != "org-secret-header" || len(got.CallerKeys) != 1 || !got.SavedAt.Equal(want.SavedAt) {
		t.Fatalf("round trip: got %+v", got)
	}
	for h, k := range want.CallerKeys {
		if g := got.CallerKeys[h]; g.ID != k.ID || g.Caller != k.Caller || !g.ExpiresAt.Equal(k.ExpiresAt) {
			t.Fatalf("caller key hash lost: %v", got.CallerKeys)
		}
	}
}

func TestDamagedDiskCopyFallsBackToRedisAndNewestWins(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := storetest.Redis(t, "lastgood")
	c, err := New(t.TempDir(), rdb, prefix, sealer(t, storetest.TestKey), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Save(ctx, sample(7)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(c.Path())
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(c.Path(), b, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := load(ctx, c)
	if err != nil || got.Version != 7 {
		t.Fatalf("damaged disk copy should fall back to Redis: %v %v", got.Version, err)
	}

	// An older copy in Redis (another instance lagging) loses to a newer file.
	if err := c.Save(ctx, sample(9)); err != nil {
		t.Fatal(err)
	}
	old := c.sealer.Seal(`{"version":3,"snapshot":"e30=","caller_keys":{}}`, additional)
	rdb.Set(ctx, prefix+":lastgood", old, 0)
	if got, err := load(ctx, c); err != nil || got.Version != 9 {
		t.Fatalf("newest copy should win: %v %v", got.Version, err)
	}

	// Sealed with another secret key: unusable everywhere, and said so.
	other, err := New(c.dir, rdb, prefix, sealer(t, strings.Repeat("cd", 32)), nil)
	if err != nil {
		t.Fatal(err)
	}
	var unusable *live.UnusableError
	if _, err := load(ctx, other); !errors.As(err, &unusable) || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("copies sealed with another key must not load: %v", err)
	}
}

func TestDiskOnlyWhenRedisIsAbsent(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c, err := New(dir, nil, "x", sealer(t, storetest.TestKey), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Save(ctx, sample(2)); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != FileName {
		t.Fatalf("the atomic write left %v", entries)
	}
	if got, err := load(ctx, c); err != nil || got.Version != 2 {
		t.Fatalf("got %v %v", got.Version, err)
	}
}

// The exact roll-back: a copy saved at epoch 70 is put back on disk after
// epoch 80 was saved, and the Redis copy is deleted. The epoch mark (a
// separate key) still says 80, so the old copy is refused — and with no
// witness at all it is refused unless unwitnessed copies are allowed.
func TestRolledBackDiskCopyIsRefusedByTheRedisMark(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := storetest.Redis(t, "lastgood")
	c, err := New(t.TempDir(), rdb, prefix, sealer(t, storetest.TestKey), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Save(ctx, sample(7)); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(c.Path())
	if err := c.Save(ctx, sample(8)); err != nil {
		t.Fatal(err)
	}
	if err := c.Save(ctx, sample(6)); err != nil { // a lagging instance saves late
		t.Fatal(err)
	}
	if n, _ := rdb.Get(ctx, prefix+":lastgood:epoch").Int64(); n != 80 {
		t.Fatalf("the epoch mark went back to %d", n)
	}
	if err := os.WriteFile(c.Path(), old, 0o600); err != nil {
		t.Fatal(err)
	}
	rdb.Del(ctx, prefix+":lastgood")
	copies, witnesses := c.Copies(ctx)
	_, err = live.Choose(copies, witnesses, true)
	var stale *live.StaleError
	if !errors.As(err, &stale) || stale.Epoch != 70 || stale.Witness != (live.Witness{Name: "redis", Epoch: 80}) {
		t.Fatalf("a rolled-back copy: got %v, want refused against the Redis mark", err)
	}
	rdb.Del(ctx, prefix+":lastgood:epoch") // Redis restarted without persistence
	copies, witnesses = c.Copies(ctx)
	var unwitnessed *live.UnwitnessedError
	if _, err := live.Choose(copies, witnesses, false); !errors.As(err, &unwitnessed) {
		t.Fatalf("no witness: got %v, want refused", err)
	}
}
