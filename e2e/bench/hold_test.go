//go:build bench

package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"switchyard/store"
	"switchyard/store/secrets"
	"switchyard/store/storetest"
)

// TestHold sets up what make bench measures — the fake vendor and a
// gateway serving the bench's configuration, with a pprof listener — and
// keeps them up for BENCH_HOLD (a duration), printing where they are, so a
// profile or a driver can be pointed at them by hand:
//
//	BENCH_HOLD=30m BENCH_BIN=$PWD/bin go test -tags bench -run TestHold -v ./e2e/bench/
func TestHold(t *testing.T) {
	hold := envDur("BENCH_HOLD", 0)
	if os.Getenv("BENCH_HOLD") == "" {
		t.Skip("BENCH_HOLD is not set")
	}
	bin := os.Getenv("BENCH_BIN")
	if bin == "" {
		bin = "../../bin"
	}
	fakeAddr := freeAddr(t)
	startProc(t, filepath.Join(bin, "fakeupstream"), nil, "-addr", fakeAddr, "-reply-chunks", "5", "-first-chunk-delay", "2ms")
	waitOK(t, "http://"+fakeAddr+"/_fake/stats")
	fakeBase := "http://" + fakeAddr + "/v1"
	dsn := storetest.NewDatabase(t)
	key, _ := secrets.ParseKey(storetest.TestKey)
	sealer, _ := secrets.NewSealer(key)
	st, err := store.Open(context.Background(), dsn, sealer)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(); err != nil {
		t.Fatal(err)
	}
	b := newBenchConfig(t, st, fakeBase)
	gwAddr, pprofAddr := freeAddr(t), freeAddr(t)
	env := []string{
		"SWITCHYARD_ADDR=" + gwAddr, "SWITCHYARD_DATABASE_URL=" + dsn, "SWITCHYARD_SECRET_KEY=" + storetest.TestKey,
		"SWITCHYARD_ADMIN_PASSWORD=bench-password-1", "SWITCHYARD_SPILL_DIR=" + t.TempDir(), "SWITCHYARD_LOG_LEVEL=warn",
		"SWITCHYARD_REDIS_URL=" + redisURL(), fmt.Sprintf("SWITCHYARD_REDIS_PREFIX=sybench%d", time.Now().UnixNano()),
		fmt.Sprintf("SWITCHYARD_MAX_INFLIGHT=%d", inflightCap),
		"SWITCHYARD_MAX_PENDING_PER_IP=0", "SWITCHYARD_MAX_CONNS_PER_IP=0", "SWITCHYARD_PPROF_ADDR=" + pprofAddr,
	}
	gw := startProc(t, filepath.Join(bin, "switchyard"), env)
	gwBase := "http://" + gwAddr
	waitOK(t, gwBase+"/healthz")
	gateway := target{name: "gateway", url: gwBase + "/v1/chat/completions", key: b.callerKey}
	waitServes(t, gateway)
	fmt.Printf("HOLD direct=%s/chat/completions gateway=%s key=%s pprof=%s pid=%d admin_token=%s for %s\n",
		fakeBase, gateway.url, b.callerKey, pprofAddr, gw.Process.Pid, b.adminToken, hold)
	time.Sleep(hold)
}
