//go:build bench

package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestHold sets up what make bench measures — the fake vendor and a
// gateway serving the bench's configuration, with a pprof listener — and
// keeps them up for BENCH_HOLD (a duration; unset, it only checks that the
// gateway serves), printing where they are, so a profile or a driver can be
// pointed at them by hand:
//
//	BENCH_HOLD=30m BENCH_BIN=$PWD/bin go test -tags bench -run TestHold -v ./e2e/bench/
func TestHold(t *testing.T) {
	hold := time.Duration(0) // without BENCH_HOLD: the set-up is checked, then torn down
	if v := os.Getenv("BENCH_HOLD"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("BENCH_HOLD=%q: %v", v, err)
		}
		hold = d
	}
	bin := benchBin()
	w := newBenchWorld(t, bin)
	gwAddr, pprofAddr := freeAddr(t), freeAddr(t)
	env := append(gatewayEnv(t, gwAddr, w.dsn), "SWITCHYARD_PPROF_ADDR="+pprofAddr)
	fakeBase, b := w.fakeBase, w.b
	gw := startProc(t, filepath.Join(bin, "switchyard"), env)
	gwBase := "http://" + gwAddr
	waitOK(t, gwBase+"/healthz")
	gateway := target{name: "gateway", url: gwBase + "/v1/chat/completions", key: b.callerKey}
	waitServes(t, gateway)
	fmt.Printf("HOLD direct=%s/chat/completions gateway=%s key=%s pprof=%s pid=%d admin_token=%s for %s\n",
		fakeBase, gateway.url, b.callerKey, pprofAddr, gw.Process.Pid, b.adminToken, hold)
	time.Sleep(hold)
}
