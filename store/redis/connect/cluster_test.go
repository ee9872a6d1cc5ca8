package connect_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/store/redis/connect"
	"switchyard/store/storetest"
)

// loseReply passes a connection through, except that once armed, the reply
// to the next command holding marker is read from Redis (so the command has
// run), thrown away, and the connection closed: a reply lost on the way.
type loseReply struct {
	net.Conn
	armed  *atomic.Bool
	marker []byte
	drop   atomic.Bool
}

func (c *loseReply) Write(b []byte) (int, error) {
	if bytes.Contains(b, c.marker) && c.armed.CompareAndSwap(true, false) {
		c.drop.Store(true)
	}
	return c.Conn.Write(b)
}

func (c *loseReply) Read(b []byte) (int, error) {
	if c.drop.Load() {
		_, _ = c.Conn.Read(b) // the reply: the command ran
		_ = c.Conn.Close()
		return 0, io.EOF
	}
	return c.Conn.Read(b)
}

// On Redis Cluster a command whose reply is lost is not sent again (go-redis
// would otherwise resend it under MaxRedirects), while MOVED redirects are
// still followed: a client that starts with one seed reaches keys on every
// master.
func TestClusterNoResendButRedirects(t *testing.T) {
	cl := storetest.NewCluster(t)
	cfg, err := connect.Parse("redis+cluster://" + cl.Addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Cluster.MaxRedirects != 0 || cfg.Cluster.MaxRetries != -1 {
		t.Fatalf("redirects %d retries %d", cfg.Cluster.MaxRedirects, cfg.Cluster.MaxRetries)
	}
	var armed atomic.Bool
	marker := []byte("lostreply")
	cfg.Cluster.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &loseReply{Conn: c, armed: &armed, marker: marker}, nil
	}
	cfg.Cluster.ReadTimeout = 2 * time.Second
	rdb := cfg.Client()
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// Keys on every master through one seed: MOVED is followed.
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		if err := rdb.Set(ctx, "x:"+k, "1", time.Minute).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
	}

	key := "{lostreply}:n"
	armed.Store(true)
	err = rdb.Incr(ctx, key).Err()
	var lost *connect.ErrReplyLost
	if !errors.As(err, &lost) || !strings.Contains(err.Error(), "reply lost") {
		t.Fatalf("INCR with its reply lost: %v, want ErrReplyLost", err)
	}
	if n, err := rdb.Get(ctx, key).Int64(); err != nil || n != 1 {
		t.Fatalf("counter %d (%v) after one INCR whose reply was lost: want 1, the command not resent", n, err)
	}

	// Without the hook go-redis resends it: the test above can fail.
	plain := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs[:1], Dialer: cfg.Cluster.Dialer, MaxRetries: -1, ReadTimeout: 2 * time.Second})
	defer plain.Close()
	armed.Store(true)
	_ = plain.Incr(ctx, key).Err()
	if n, _ := rdb.Get(ctx, key).Int64(); n != 3 {
		t.Logf("plain go-redis cluster client: counter %d after one more INCR (3 means it resent the command)", n)
	} else {
		t.Log("plain go-redis cluster client resent the INCR whose reply was lost (counter 3)")
	}
}
