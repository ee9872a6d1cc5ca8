package connect

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, url string
		want      Topology
		check     func(t *testing.T, c *Config)
	}{
		{"single", "redis://127.0.0.1:6379/2", Single, func(t *testing.T, c *Config) {
			o := c.Single
			eq(t, "addr", o.Addr, "127.0.0.1:6379")
			eq(t, "db", o.DB, 2)
			eq(t, "tls", o.TLSConfig == nil, true)
			eq(t, "max retries", o.MaxRetries, -1)
			eq(t, "ctx timeouts", o.ContextTimeoutEnabled, true)
			eq(t, "read timeout", o.ReadTimeout, DefaultTimeout)
			eq(t, "pool", o.PoolSize, DefaultPoolSize)
		}},
		{"single TLS with ACL user", "rediss://app:s3cret@redis.internal:6380/0?read_timeout=2s&pool_size=10", Single, func(t *testing.T, c *Config) {
			o := c.Single
			eq(t, "user", o.Username, "app")
			eq(t, "password", o.Password, "s3cret")
			eq(t, "tls", o.TLSConfig != nil, true)
			eq(t, "server name", o.TLSConfig.ServerName, "redis.internal")
			eq(t, "read timeout from URL", o.ReadTimeout, 2*time.Second)
			eq(t, "pool from URL", o.PoolSize, 10)
			eq(t, "max retries forced", o.MaxRetries, -1)
		}},
		{"single asks for retries: still none", "redis://h:1/0?max_retries=5", Single, func(t *testing.T, c *Config) {
			eq(t, "max retries", c.Single.MaxRetries, -1)
		}},
		{"cluster list", "redis+cluster://app:pw@10.0.0.1:7000,10.0.0.2:7001,10.0.0.3:7002", Cluster, func(t *testing.T, c *Config) {
			o := c.Cluster
			eq(t, "addrs", strings.Join(o.Addrs, " "), "10.0.0.1:7000 10.0.0.2:7001 10.0.0.3:7002")
			eq(t, "user", o.Username, "app")
			eq(t, "password", o.Password, "pw")
			eq(t, "max retries", o.MaxRetries, -1)
			eq(t, "redirects: go-redis default", o.MaxRedirects, 0)
			eq(t, "ctx timeouts", o.ContextTimeoutEnabled, true)
			eq(t, "dial timeout", o.DialTimeout, DefaultTimeout)
			eq(t, "tls", o.TLSConfig == nil, true)
		}},
		{"cluster list TLS, default port, options", "rediss+cluster://a,b:7001/?dial_timeout=1s", Cluster, func(t *testing.T, c *Config) {
			o := c.Cluster
			eq(t, "addrs", strings.Join(o.Addrs, " "), "a:6379 b:7001")
			eq(t, "tls", o.TLSConfig != nil, true)
			eq(t, "dial timeout", o.DialTimeout, time.Second)
		}},
		{"cluster, go-redis addr= form", "redis://u:p@h1:7000?addr=h2:7001&addr=h3:7002", Cluster, func(t *testing.T, c *Config) {
			eq(t, "addrs", strings.Join(c.Cluster.Addrs, " "), "h1:7000 h2:7001 h3:7002")
			eq(t, "user", c.Cluster.Username, "u")
		}},
		{"sentinel", "redis+sentinel://app:pw@s1:26379,s2:26380/mymaster?db=3&sentinel_password=sp", Sentinel, func(t *testing.T, c *Config) {
			o := c.Sentinel
			eq(t, "sentinels", strings.Join(o.SentinelAddrs, " "), "s1:26379 s2:26380")
			eq(t, "master", o.MasterName, "mymaster")
			eq(t, "db", o.DB, 3)
			eq(t, "user", o.Username, "app")
			eq(t, "password", o.Password, "pw")
			eq(t, "sentinel password", o.SentinelPassword, "sp")
			eq(t, "tls", o.TLSConfig == nil, true)
			eq(t, "max retries", o.MaxRetries, -1)
			eq(t, "ctx timeouts", o.ContextTimeoutEnabled, true)
		}},
		{"sentinel TLS, db in path", "rediss+sentinel://s1/mymaster/1?read_timeout=250ms", Sentinel, func(t *testing.T, c *Config) {
			o := c.Sentinel
			eq(t, "sentinels", strings.Join(o.SentinelAddrs, " "), "s1:6379")
			eq(t, "db", o.DB, 1)
			eq(t, "tls", o.TLSConfig != nil, true)
			eq(t, "read timeout", o.ReadTimeout, 250*time.Millisecond)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			if c.Topology != tc.want {
				t.Fatalf("topology %s, want %s", c.Topology, tc.want)
			}
			tc.check(t, c)
			if cl := c.Client(); cl == nil {
				t.Fatal("no client")
			} else {
				_ = cl.Close()
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"127.0.0.1:6379", "missing scheme"},
		{"http://hunter2@h:1", "unknown scheme"},
		{"redis://h:1/0?frobnicate=1", "frobnicate"},
		{"redis+cluster://h1:1,,h2:2", "empty host"},
		{"redis+cluster://h1:1,h2:2/3", "only database 0"},
		{"redis://h1:1/4?addr=h2:2", "only database 0"},
		{"redis+sentinel://s1:1,s2:2", "master name"},
		{"redis+sentinel://s1:1/m/x", "database number"},
		{"redis+sentinel://s1:1/m?db=-1", "invalid db"},
		{"redis+sentinel://s1:1/m?bogus=1", "unknown sentinel option"},
		{"redis+sentinel://s1:1/m/0/9", "sentinel path"},
		{"redis://user:hunter2@h:port/0", ""},
	} {
		t.Run(tc.url, func(t *testing.T) {
			_, err := Parse(tc.url)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error quotes the password: %q", err)
			}
		})
	}
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}
