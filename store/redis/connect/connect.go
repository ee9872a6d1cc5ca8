// Package connect turns SWITCHYARD_REDIS_URL into a go-redis client for one
// of three topologies, always as a redis.UniversalClient:
//
//	redis://[user:pass@]host:port[/db][?opts]            one node
//	rediss://...                                          one node over TLS
//	redis+cluster://[user:pass@]h1:p1,h2:p2[?opts]        Redis Cluster (seed nodes)
//	redis://[user:pass@]h1:p1?addr=h2:p2&addr=h3:p3       the same (go-redis ParseClusterURL form)
//	redis+sentinel://[user:pass@]s1:p1,s2:p2/master[/db][?opts]  Sentinel
//
// rediss+cluster:// and rediss+sentinel:// use TLS. user:pass are the ACL
// credentials of the data nodes; a Sentinel's own credentials, when it has
// any, go in sentinel_username / sentinel_password.
//
// Whatever the URL says, the client never resends a command whose reply was
// lost (see New), and every call honours its context's deadline.
package connect

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Topology names how Redis is deployed.
type Topology string

const (
	Single   Topology = "single"
	Cluster  Topology = "cluster"
	Sentinel Topology = "sentinel"
)

// Defaults applied when the URL does not set them: short, so a dead Redis
// fails fast and the per-instance fallbacks take over.
const (
	DefaultTimeout  = 500 * time.Millisecond
	DefaultPoolSize = 128
)

// Config is a parsed URL: exactly one of the option sets is filled, as
// Topology says.
type Config struct {
	Topology Topology
	Single   *redis.Options
	Cluster  *redis.ClusterOptions
	Sentinel *redis.FailoverOptions
}

// New parses url and connects (lazily: go-redis dials on first use).
func New(raw string) (redis.UniversalClient, error) {
	c, err := Parse(raw)
	if err != nil {
		return nil, err
	}
	return c.Client(), nil
}

// Parse reads a Redis URL of any of the package's forms and applies the
// switchyard semantics (no blind retries, context deadlines, short
// defaults). Errors never quote the URL: it may hold a password.
func Parse(raw string) (*Config, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return nil, errors.New("redis URL: missing scheme (redis://, rediss://, redis+cluster://, redis+sentinel://)")
	}
	var c *Config
	var err error
	switch strings.ToLower(scheme) {
	case "redis", "rediss":
		c, err = parsePlain(raw)
	case "redis+cluster", "rediss+cluster":
		c, err = parseClusterList(strings.TrimSuffix(strings.ToLower(scheme), "+cluster"), rest)
	case "redis+sentinel", "rediss+sentinel":
		c, err = parseSentinel(strings.ToLower(scheme) == "rediss+sentinel", rest)
	default:
		return nil, fmt.Errorf("redis URL: unknown scheme %q (want redis, rediss, redis+cluster, rediss+cluster, redis+sentinel or rediss+sentinel)", bound(scheme))
	}
	if err != nil {
		return nil, err
	}
	c.applyDefaults()
	return c, nil
}

func parsePlain(raw string) (*Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, clean(err)
	}
	if u.Query().Has("addr") {
		o, err := redis.ParseClusterURL(raw)
		if err != nil {
			return nil, clean(err)
		}
		if p := strings.Trim(u.Path, "/"); p != "" && p != "0" {
			return nil, errors.New("redis URL: Redis Cluster has only database 0")
		}
		return &Config{Topology: Cluster, Cluster: o}, nil
	}
	o, err := redis.ParseURL(raw)
	if err != nil {
		return nil, clean(err)
	}
	return &Config{Topology: Single, Single: o}, nil
}

// splitHosts splits "user:pass@h1:p1,h2:p2/path?query" into the part
// before the hosts, the hosts and the part after.
func splitHosts(rest string) (userinfo string, hosts []string, tail string, err error) {
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		userinfo, authority = authority[:i+1], authority[i+1:]
	}
	for _, h := range strings.Split(authority, ",") {
		if h == "" {
			return "", nil, "", errors.New("redis URL: empty host in the host list")
		}
		if _, port, err := net.SplitHostPort(h); err != nil || port == "" {
			if !strings.Contains(h, ":") {
				h += ":6379"
			} else {
				return "", nil, "", fmt.Errorf("redis URL: host %q is not host:port", bound(h))
			}
		}
		hosts = append(hosts, h)
	}
	return userinfo, hosts, tail, nil
}

func parseClusterList(scheme, rest string) (*Config, error) {
	userinfo, hosts, tail, err := splitHosts(rest)
	if err != nil {
		return nil, err
	}
	// Rewrite to go-redis's own cluster form: the first seed is the host,
	// the others are addr= parameters.
	u, err := url.Parse(scheme + "://" + userinfo + hosts[0] + tail)
	if err != nil {
		return nil, clean(err)
	}
	if p := strings.Trim(u.Path, "/"); p != "" && p != "0" {
		return nil, errors.New("redis URL: Redis Cluster has only database 0")
	}
	u.Path = ""
	q := u.Query()
	for _, h := range hosts[1:] {
		q.Add("addr", h)
	}
	u.RawQuery = q.Encode()
	o, err := redis.ParseClusterURL(u.String())
	if err != nil {
		return nil, clean(err)
	}
	return &Config{Topology: Cluster, Cluster: o}, nil
}

func parseSentinel(useTLS bool, rest string) (*Config, error) {
	userinfo, hosts, tail, err := splitHosts(rest)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse("redis://" + userinfo + hosts[0] + tail)
	if err != nil {
		return nil, clean(err)
	}
	o := &redis.FailoverOptions{SentinelAddrs: hosts}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if parts[0] == "" {
		return nil, errors.New("redis URL: sentinel form needs the master name as the path: redis+sentinel://s1:26379,s2:26379/mymaster")
	}
	if len(parts) > 2 {
		return nil, errors.New("redis URL: sentinel path is /<master name>[/<db>]")
	}
	o.MasterName = parts[0]
	if len(parts) == 2 {
		if o.DB, err = strconv.Atoi(parts[1]); err != nil || o.DB < 0 {
			return nil, fmt.Errorf("redis URL: invalid database number %q", bound(parts[1]))
		}
	}
	if u.User != nil {
		o.Username = u.User.Username()
		o.Password, _ = u.User.Password()
	}
	if useTLS {
		o.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	for k, vs := range u.Query() {
		v := vs[len(vs)-1]
		var err error
		switch k {
		case "db":
			o.DB, err = strconv.Atoi(v)
			if err == nil && o.DB < 0 {
				err = errors.New("negative")
			}
		case "sentinel_username":
			o.SentinelUsername = v
		case "sentinel_password":
			o.SentinelPassword = v
		case "client_name":
			o.ClientName = v
		case "protocol":
			o.Protocol, err = strconv.Atoi(v)
		case "pool_size":
			o.PoolSize, err = strconv.Atoi(v)
		case "dial_timeout":
			o.DialTimeout, err = duration(v)
		case "read_timeout":
			o.ReadTimeout, err = duration(v)
		case "write_timeout":
			o.WriteTimeout, err = duration(v)
		case "replica_only":
			o.ReplicaOnly, err = strconv.ParseBool(v)
		default:
			return nil, fmt.Errorf("redis URL: unknown sentinel option %q", bound(k))
		}
		if err != nil {
			return nil, fmt.Errorf("redis URL: invalid %s", k)
		}
	}
	return &Config{Topology: Sentinel, Sentinel: o}, nil
}

// duration reads "500ms" or, as go-redis does, a bare number of seconds.
func duration(s string) (time.Duration, error) {
	if n, err := strconv.Atoi(s); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	return time.ParseDuration(s)
}

// applyDefaults sets the switchyard semantics on whichever options are
// filled:
//
//   - ContextTimeoutEnabled: a call ends at its context's deadline, so a hung
//     Redis costs a request at most the caller's budget (the limiter's 50 ms),
//     not the socket timeout.
//   - MaxRetries -1: a command whose reply was lost is never resent. A limit
//     script, an idempotency claim or a load-counter increment may already
//     have run; resending would charge twice. The callers treat an unknown
//     outcome as such (fallback, repair sweeps).
//   - Redis Cluster: MOVED and ASK replies (a slot moved, after a failover
//     or a resharding) must still be followed; nothing ran on the node that
//     answered them. go-redis follows them under MaxRedirects, which also
//     bounds its retries of network errors; so MaxRedirects keeps its
//     default (3) and a hook on every node (noResend) turns a lost reply
//     into an error the cluster client does not retry.
//   - Short dial/read/write timeouts and a pool of 128 unless the URL says
//     otherwise.
func (c *Config) applyDefaults() {
	def := func(d *time.Duration) {
		if *d == 0 {
			*d = DefaultTimeout
		}
	}
	pool := func(n *int) {
		if *n == 0 {
			*n = DefaultPoolSize
		}
	}
	switch c.Topology {
	case Single:
		o := c.Single
		o.ContextTimeoutEnabled, o.MaxRetries = true, -1
		def(&o.DialTimeout)
		def(&o.ReadTimeout)
		def(&o.WriteTimeout)
		pool(&o.PoolSize)
	case Cluster:
		o := c.Cluster
		o.ContextTimeoutEnabled, o.MaxRetries = true, -1
		def(&o.DialTimeout)
		def(&o.ReadTimeout)
		def(&o.WriteTimeout)
		pool(&o.PoolSize)
	case Sentinel:
		o := c.Sentinel
		o.ContextTimeoutEnabled, o.MaxRetries = true, -1
		def(&o.DialTimeout)
		def(&o.ReadTimeout)
		def(&o.WriteTimeout)
		pool(&o.PoolSize)
	}
}

// Client builds the client the Config describes.
func (c *Config) Client() redis.UniversalClient {
	switch c.Topology {
	case Cluster:
		return NewClusterClient(c.Cluster)
	case Sentinel:
		return redis.NewFailoverClient(c.Sentinel)
	default:
		return redis.NewClient(c.Single)
	}
}

// NewClusterClient is redis.NewClusterClient with noResend on every node.
func NewClusterClient(o *redis.ClusterOptions) *redis.ClusterClient {
	cc := redis.NewClusterClient(o)
	cc.OnNewNode(func(n *redis.Client) { n.AddHook(noResend{}) })
	return cc
}

// noResend hides a lost reply from the cluster client's retry loop, which
// would otherwise resend the command to the same node and then to another
// one. Errors that prove the command did not run stay as they are and are
// retried or followed: Redis error replies (MOVED, ASK, TRYAGAIN,
// CLUSTERDOWN, READONLY, LOADING), a failed dial, an exhausted pool. The
// context's own errors pass through too (the loop never retries them).
//
// Pipelines are not covered: go-redis decides their retries below the hook.
// The pipelines switchyard runs are idempotent (SET/EXPIRE/HSET/DEL) or
// replays whose double count is bounded as the manual says
// (static/manual/settings.md, "What a failover can lose").
type noResend struct{}

// ErrReplyLost wraps a network error that struck after a command was sent:
// it may or may not have run. It deliberately does not unwrap (go-redis's
// retry test looks through wrappers), so match it with errors.As.
type ErrReplyLost struct{ Err error }

func (e *ErrReplyLost) Error() string { return "redis: reply lost, not retried: " + e.Err.Error() }

func (noResend) DialHook(next redis.DialHook) redis.DialHook { return next }

func (noResend) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (noResend) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil || !replyLost(err) {
			return err
		}
		lost := &ErrReplyLost{Err: err}
		cmd.SetErr(lost)
		return lost
	}
}

func replyLost(err error) bool {
	var rerr redis.Error
	var op *net.OpError
	switch {
	case errors.Is(err, redis.Nil), errors.As(err, &rerr),
		errors.As(err, &op) && op.Op == "dial",
		errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted),
		errors.Is(err, redis.ErrClosed),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	return true
}

// clean drops the URL from net/url's errors: it may hold a password.
func clean(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	return errors.New("redis URL: " + strings.TrimPrefix(msg, "redis: "))
}

func bound(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
