package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/storetest"
)

// One installation on several machines: three API instances and two
// workers on one PostgreSQL and a Redis Cluster. A caller's RPM is enforced
// exactly across the three, a publish reaches every instance within 2 s,
// no singleton job slot runs twice, and when a worker dies the other goes
// on running the jobs (taking over its lease). The figures are printed.
func TestThreeAPIInstancesAndTwoWorkersActAsOne(t *testing.T) {
	in := newInstallation(t)
	dsn, st, key, prefix := in.dsn, in.st, in.key, in.prefix
	ctx := context.Background()
	const (
		rpm      = 30
		leaseTTL = 5 * time.Second
	)
	setFastRPM(t, st, rpm)
	// The installation's Redis is a private local Redis Cluster (3 masters,
	// 3 replicas), reached through a redis+cluster:// URL.
	cluster := storetest.NewCluster(t)
	redisEnv := "SWITCHYARD_REDIS_URL=" + cluster.URL()

	var apis []*gatewayProc
	for range 3 {
		// A generous Redis timeout: on a loaded 2-core test machine the
		// default 50 ms sends instances to their per-instance fallback,
		// which is what the fault tests cover, not what this one measures.
		apis = append(apis, startGateway(t, dsn, prefix, redisEnv, "APP_ROLE=api", "SWITCHYARD_SPILL_DIR="+t.TempDir(), "SWITCHYARD_REDIS_TIMEOUT=2s"))
	}
	var workers []*gatewayProc
	for range 2 {
		// A short lease: the takeover after a kill waits for its expiry.
		workers = append(workers, startGateway(t, dsn, prefix, redisEnv, "APP_ROLE=worker", "SWITCHYARD_SPILL_DIR="+t.TempDir(), "SWITCHYARD_PROBE_INTERVAL=1s",
			"SWITCHYARD_WORKER_LEASE_TTL="+leaseTTL.String()))
	}
	for _, g := range append(append([]*gatewayProc{}, apis...), workers...) {
		waitHealthy(t, g.URL+"/readyz", g.proc)
	}
	want := versionOf(t, apis[0])
	for _, g := range apis {
		waitFor(t, 10*time.Second, "every instance on the RPM version", func() bool { return versionOf(t, g) == want })
	}

	// One RPM limit across three instances: 3×rpm requests spread round
	// robin, all within the minute.
	ok, limited, other := spread(t, apis, key, 3*rpm, 3*rpm)
	t.Logf("RPM %d across 3 instances: admitted %d, limited %d, other %d of %d", rpm, ok, limited, other, 3*rpm)
	if ok != rpm || limited != 2*rpm {
		t.Errorf("admitted %d and limited %d of %d requests; want exactly %d admitted", ok, limited, 3*rpm, rpm)
	}

	// A publish reaches every instance within 2 s.
	setFastRPM(t, st, rpm+1)
	published := time.Now()
	next := want + 1
	for i, g := range apis {
		waitFor(t, 2*time.Second-time.Since(published), fmt.Sprintf("instance %d to serve version %d", i, next), func() bool { return versionOf(t, g) == next })
		t.Logf("instance %d serves version %d after %s", i, next, time.Since(published).Round(time.Millisecond))
	}

	leasedRPMAcrossInstances(t, st, cluster, prefix, key, apis)

	// Singleton jobs: several probe slots pass, none runs twice; then the
	// worker in the middle of a run is killed and the other takes the job
	// over once the dead one's lease expires.
	time.Sleep(3 * time.Second)
	victim, survivor := workerMidRun(t, st, workers)
	killed := time.Now()
	_ = victim.cmd.Process.Kill()
	_ = victim.wait(t, 10*time.Second)
	waitFor(t, 60*time.Second, "the surviving worker to run the probe job after the kill", func() bool {
		var n int
		_ = st.DB().QueryRowContext(ctx, `SELECT count(*) FROM job_runs WHERE job = 'health-probe' AND instance = $1 AND started_at > $2 AND outcome = 'ok'`,
			instanceOf(t, survivor), killed).Scan(&n)
		return n > 0
	})
	var lost int
	_ = st.DB().QueryRowContext(ctx, `SELECT count(*) FROM job_runs WHERE job = 'health-probe' AND outcome = 'lost' AND instance = $1`, instanceOf(t, victim)).Scan(&lost)
	t.Logf("worker killed mid-run: the other took the job over %s later (lease expiry); the killed run was closed as lost: %d", time.Since(killed).Round(time.Millisecond), lost)
	if lost != 1 {
		t.Errorf("the killed worker's unfinished run should be closed as lost once, found %d", lost)
	}
	var runs, slots, dupSlots, instances int
	if err := st.DB().QueryRowContext(ctx, `
		SELECT count(*), count(DISTINCT slot), count(DISTINCT instance),
			(SELECT count(*) FROM (SELECT slot FROM job_runs WHERE job = 'health-probe' GROUP BY slot HAVING count(*) > 1) d)
		FROM job_runs WHERE job = 'health-probe'`).Scan(&runs, &slots, &instances, &dupSlots); err != nil {
		t.Fatal(err)
	}
	t.Logf("health-probe: %d runs over %d slots by %d worker instances; %d slots ran twice", runs, slots, instances, dupSlots)
	if dupSlots != 0 || runs != slots {
		t.Errorf("a singleton job slot ran twice: %d runs for %d slots", runs, slots)
	}
}

// leasedRPMAcrossInstances: a limit large enough to be leased (1,200 RPM,
// a slice of at most 75 requests per instance) is spent from slices on the
// three instances, and still never exceeded: the admitted requests stay
// within what the window allows in the time taken, and at most three
// slices below the burst.
func leasedRPMAcrossInstances(t *testing.T, st *store.Store, cluster *storetest.LocalCluster, prefix, key string, apis []*gatewayProc) {
	const rpm, slice = 1200, 1200 / 16
	// The version is the one published: an instance may already serve it
	// by the time it could be read back from one.
	id, want := setFastRPM(t, st, rpm)
	for _, g := range apis {
		waitFor(t, 10*time.Second, "every instance on the leased RPM version", func() bool { return versionOf(t, g) == want })
	}
	// The window the exact phase left full (30 RPM spent: a minute ahead)
	// starts afresh for the new limit.
	if err := cluster.Client().Del(context.Background(), fmt.Sprintf("%s:{c%d}:rpm:fast", prefix, id)).Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ok, limited, other := spread(t, apis, key, 3*rpm/2, 24)
	elapsed := time.Since(start)
	allowed := rpm + int64(elapsed.Seconds()*rpm/60) + 1
	var sliced float64
	for _, g := range apis {
		sliced += max(metricValue(get(t, g.URL+"/metrics"), `switchyard_limit_decisions_total{by="slice"}`), 0)
	}
	t.Logf("RPM %d across 3 instances from slices: admitted %d (allowed %d in %v, at least %d), limited %d, other %d; %.0f decisions from slices",
		rpm, ok, allowed, elapsed.Round(time.Millisecond), rpm-3*slice, limited, other, sliced)
	switch {
	case other != 0:
		t.Errorf("%d requests neither served nor limited", other)
	case ok > allowed:
		t.Errorf("admitted %d: over the %d the limit allows in %v", ok, allowed, elapsed)
	case ok < rpm-3*slice:
		t.Errorf("admitted %d: more than three slices (%d) short of the burst %d", ok, 3*slice, rpm)
	case sliced < float64(ok)/2:
		t.Errorf("%.0f of %d admitted requests were decided from slices", sliced, ok)
	}
}

// spread sends n chat requests round robin to the instances from workers
// goroutines at once, and counts the answers: served, limited (429) and
// anything else.
func spread(t *testing.T, apis []*gatewayProc, key string, n, workers int) (ok, limited, other int64) {
	var okN, limitedN, otherN, next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				res, err := chat(t, apis[int(i)%len(apis)].URL, key, false)
				if err != nil {
					otherN.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				switch res.StatusCode {
				case 200:
					okN.Add(1)
				case 429:
					limitedN.Add(1)
				default:
					otherN.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return okN.Load(), limitedN.Load(), otherN.Load()
}

// setFastRPM sets the seeded caller's fast-tier RPM and publishes, and
// returns the caller's id and the version published.
func setFastRPM(t *testing.T, st *store.Store, rpm int64) (callerID, version int64) {
	t.Helper()
	ctx := context.Background()
	snap, _, err := st.Draft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var c config.Caller
	for _, x := range snap.Callers {
		if x.Name == "app" {
			c = x
		}
	}
	c.Limits = []config.TierLimit{{Tier: config.TierFast, RPM: rpm}}
	if err := st.UpdateCaller(ctx, c.ID, c); err != nil {
		t.Fatal(err)
	}
	out, err := st.Publish(ctx, store.PublishInput{Author: "e2e", Message: fmt.Sprintf("rpm %d", rpm), Check: func(s config.Snapshot) config.Result { return config.DryRun(s, storeEnv) }})
	if err != nil {
		t.Fatal(err)
	}
	return c.ID, out.Version.Number
}

// versionOf is the configuration version an instance serves (/healthz).
func versionOf(t *testing.T, g *gatewayProc) int64 {
	res, err := http.Get(g.URL + "/healthz")
	if err != nil {
		return -1
	}
	defer res.Body.Close()
	var h struct {
		Version int64 `json:"version"`
	}
	_ = json.NewDecoder(res.Body).Decode(&h)
	return h.Version
}

// instanceOf is the instance id a switchyard process logged at start.
func instanceOf(t *testing.T, g *gatewayProc) string {
	t.Helper()
	m := regexp.MustCompile(`msg="switchyard listening".* instance=(\S+)`).FindStringSubmatch(g.log())
	if m == nil {
		t.Fatalf("no instance id in the log:\n%s", tail(g.log(), 2000))
	}
	return m[1]
}

// workerMidRun waits until one of two workers is in the middle of a
// health-probe run and returns it and the other.
func workerMidRun(t *testing.T, st *store.Store, workers []*gatewayProc) (running, other *gatewayProc) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var inst string
		err := st.DB().QueryRow(`SELECT instance FROM job_runs WHERE job = 'health-probe' AND outcome = 'running' ORDER BY started_at DESC LIMIT 1`).Scan(&inst)
		if err == nil {
			for i, w := range workers {
				if instanceOf(t, w) == inst {
					return w, workers[1-i]
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no worker was caught in the middle of a probe run")
	return nil, nil
}
