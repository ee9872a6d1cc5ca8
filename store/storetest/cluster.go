package storetest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/store/redis/connect"
)

// LocalCluster is a Redis Cluster of 3 masters and 3 replicas run by the
// test on free loopback ports, its data in a temporary directory. It never
// touches a Redis the developer runs (6379 or any other port in use).
type LocalCluster struct {
	Addrs []string // every node, in start order
	dir   string
	procs []*exec.Cmd
}

// redisBinaries finds redis-server and redis-cli or says how to get them.
func redisBinaries() (server, cli string, err error) {
	server, err1 := exec.LookPath("redis-server")
	cli, err2 := exec.LookPath("redis-cli")
	if err1 != nil || err2 != nil {
		return "", "", fmt.Errorf("the Redis Cluster tests need redis-server and redis-cli on PATH: `apt-get install redis-server` (Debian/Ubuntu)")
	}
	return server, cli, nil
}

// freePorts returns n distinct free loopback ports.
func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	var ports []int
	for len(ports) < n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// StartCluster starts 6 redis-server processes in cluster mode and joins
// them with `redis-cli --cluster create --cluster-replicas 1`. Stop it with
// Stop; the processes also die with the test binary (Pdeathsig).
func StartCluster() (*LocalCluster, error) {
	server, cli, err := redisBinaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "switchyard-redis-cluster-")
	if err != nil {
		return nil, err
	}
	c := &LocalCluster{dir: dir}
	ok := false
	defer func() {
		if !ok {
			c.Stop()
		}
	}()
	ports, err := freePorts(12) // 6 client ports, 6 cluster-bus ports
	if err != nil {
		return nil, err
	}
	for i := range 6 {
		port, bus := ports[i], ports[6+i]
		nd := filepath.Join(dir, strconv.Itoa(port))
		if err := os.MkdirAll(nd, 0o700); err != nil {
			return nil, err
		}
		cmd := exec.Command(server,
			"--bind", "127.0.0.1", "--port", strconv.Itoa(port),
			"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(bus),
			"--cluster-config-file", filepath.Join(nd, "nodes.conf"),
			"--cluster-node-timeout", "2000",
			"--dir", nd, "--save", "", "--appendonly", "no",
			"--logfile", filepath.Join(nd, "redis.log"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("start redis-server: %w", err)
		}
		c.procs = append(c.procs, cmd)
		c.Addrs = append(c.Addrs, "127.0.0.1:"+strconv.Itoa(port))
	}
	for _, a := range c.Addrs {
		if err := waitPing(a, 10*time.Second); err != nil {
			return nil, fmt.Errorf("redis-server at %s did not answer (log in %s): %w", a, dir, err)
		}
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("redis-cli --cluster create: %w\n%s", err, out)
	}
	if err := c.WaitHealthy(30 * time.Second); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

func waitPing(addr string, within time.Duration) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer rdb.Close()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitHealthy waits until every node reports cluster_state:ok and sees 3
// masters, and every replica's link to its master is up.
func (c *LocalCluster) WaitHealthy(within time.Duration) error {
	deadline := time.Now().Add(within)
	var last string
	for time.Now().Before(deadline) {
		if last = c.unhealthy(); last == "" {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("redis cluster not healthy after %s: %s", within, last)
}

func (c *LocalCluster) unhealthy() string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, a := range c.Addrs {
		rdb := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
		info, err := rdb.ClusterInfo(ctx).Result()
		if err == nil && !strings.Contains(info, "cluster_state:ok") {
			err = fmt.Errorf("cluster_state not ok")
		}
		if err == nil && !strings.Contains(info, "cluster_size:3") {
			err = fmt.Errorf("cluster_size not 3")
		}
		var repl string
		if err == nil {
			repl, err = rdb.Info(ctx, "replication").Result()
		}
		_ = rdb.Close()
		if err != nil {
			return a + ": " + err.Error()
		}
		if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
			return a + ": replica link down"
		}
	}
	return ""
}

// Replicas returns the addresses of the nodes that are replicas now.
func (c *LocalCluster) Replicas(ctx context.Context) ([]string, error) {
	var out []string
	for _, a := range c.Addrs {
		rdb := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
		role, err := rdb.Do(ctx, "ROLE").Slice()
		_ = rdb.Close()
		if err != nil {
			return nil, err
		}
		if len(role) > 0 && role[0] == "slave" {
			out = append(out, a)
		}
	}
	return out, nil
}

// Failover makes the replica at addr take over its master's slots
// (CLUSTER FAILOVER: the coordinated, no-data-loss kind) and waits until it
// reports itself master.
func (c *LocalCluster) Failover(ctx context.Context, addr string) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	if err := rdb.Do(ctx, "CLUSTER", "FAILOVER").Err(); err != nil {
		return fmt.Errorf("CLUSTER FAILOVER on %s: %w", addr, err)
	}
	for {
		role, err := rdb.Do(ctx, "ROLE").Slice()
		if err == nil && len(role) > 0 && role[0] == "master" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not become master: %w", addr, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Client connects to the cluster as production does (store/redis/connect:
// no blind retries, MOVED/ASK followed).
func (c *LocalCluster) Client() *redis.ClusterClient {
	cfg, err := connect.Parse("redis+cluster://" + strings.Join(c.Addrs, ","))
	if err != nil {
		panic(err) // the addresses are ours
	}
	cfg.Cluster.DialTimeout = 200 * time.Millisecond
	cfg.Cluster.ReadTimeout = 2 * time.Second // a loaded test machine
	cfg.Cluster.WriteTimeout = 2 * time.Second
	return connect.NewClusterClient(cfg.Cluster)
}

// URL is the cluster's SWITCHYARD_REDIS_URL.
func (c *LocalCluster) URL() string { return "redis+cluster://" + strings.Join(c.Addrs, ",") }

// Stop kills the processes and removes their data.
func (c *LocalCluster) Stop() {
	for _, p := range c.procs {
		if p.Process != nil {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
	}
	c.procs = nil
	if c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
}

// Logs returns the tail of every node's log, for a failing test.
func (c *LocalCluster) Logs() string {
	var b strings.Builder
	for _, a := range c.Addrs {
		_, port, _ := net.SplitHostPort(a)
		f, err := os.Open(filepath.Join(c.dir, port, "redis.log"))
		if err != nil {
			continue
		}
		var lines []string
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		_ = f.Close()
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		fmt.Fprintf(&b, "== %s\n%s\n", a, strings.Join(lines, "\n"))
	}
	return b.String()
}

// NewCluster starts a cluster for one test and stops it when the test ends.
func NewCluster(t testing.TB) *LocalCluster {
	t.Helper()
	c, err := StartCluster()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

var shared struct {
	once sync.Once
	c    *LocalCluster
	err  error
}

// SharedCluster is one cluster for the whole test binary, started on first
// use. The package's TestMain must call StopSharedCluster (RunTopologies
// does).
func SharedCluster(t testing.TB) *LocalCluster {
	t.Helper()
	shared.once.Do(func() { shared.c, shared.err = StartCluster() })
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.c
}

// StopSharedCluster stops the shared cluster if it was started.
func StopSharedCluster() {
	if shared.c != nil {
		shared.c.Stop()
	}
}
