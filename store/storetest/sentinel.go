package storetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// LocalSentinel is a master, its replica and one Sentinel (quorum 1)
// watching them as "mymaster", on free loopback ports, for one test.
type LocalSentinel struct {
	Master, Replica, Sentinel string
	MasterName                string
}

// NewSentinel starts a LocalSentinel and stops it when t ends.
func NewSentinel(t testing.TB) *LocalSentinel {
	t.Helper()
	server, _, err := redisBinaries()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ports, err := freePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	addr := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
	start := func(name string, args ...string) {
		nd := filepath.Join(dir, name)
		if err := os.MkdirAll(nd, 0o700); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(server, args...)
		cmd.Dir = nd
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	common := []string{"--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}
	start("master", append([]string{"--port", strconv.Itoa(ports[0]), "--logfile", filepath.Join(dir, "master.log")}, common...)...)
	start("replica", append([]string{"--port", strconv.Itoa(ports[1]), "--replicaof", "127.0.0.1", strconv.Itoa(ports[0]),
		"--logfile", filepath.Join(dir, "replica.log")}, common...)...)
	conf := filepath.Join(dir, "sentinel.conf")
	body := fmt.Sprintf("bind 127.0.0.1\nport %d\nsentinel monitor mymaster 127.0.0.1 %d 1\n"+
		"sentinel down-after-milliseconds mymaster 1000\nsentinel failover-timeout mymaster 5000\n", ports[2], ports[0])
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	start("sentinel", conf, "--sentinel", "--logfile", filepath.Join(dir, "sentinel.log"))
	s := &LocalSentinel{Master: addr(ports[0]), Replica: addr(ports[1]), Sentinel: addr(ports[2]), MasterName: "mymaster"}
	for _, a := range []string{s.Master, s.Replica, s.Sentinel} {
		if err := waitPing(a, 10*time.Second); err != nil {
			t.Fatalf("%s did not answer: %v (logs in %s)", a, err, dir)
		}
	}
	// Wait until the replica is in sync and the Sentinel knows it.
	deadline := time.Now().Add(20 * time.Second)
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Sentinel})
	defer sc.Close()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		reps, err := sc.Replicas(ctx, s.MasterName).Result()
		cancel()
		if err == nil && len(reps) == 1 && reps[0]["master-link-status"] == "ok" {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("sentinel never saw a synced replica: %v %v", reps, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// URL is the Sentinel form of SWITCHYARD_REDIS_URL for this deployment.
func (s *LocalSentinel) URL() string {
	return "redis+sentinel://" + s.Sentinel + "/" + s.MasterName + "/0"
}

// Failover asks the Sentinel to promote the replica (SENTINEL FAILOVER)
// and waits until it names the new master.
func (s *LocalSentinel) Failover(ctx context.Context) error {
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Sentinel})
	defer sc.Close()
	if err := sc.Failover(ctx, s.MasterName).Err(); err != nil {
		return err
	}
	for {
		addr, err := sc.GetMasterAddrByName(ctx, s.MasterName).Result()
		if err == nil && len(addr) == 2 && addr[0]+":"+addr[1] == s.Replica {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sentinel did not promote %s: %w", s.Replica, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
