//go:build bench

package bench

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// A floor is a proxy with nothing of the gateway's work in it, in front of
// the same vendor and driven by the same drivers: what any proxy of its
// kind costs on this machine. The gateway's figures are read against them.
type floor struct {
	target
	what string   // one line on what it is
	cpu  cpuGroup // its processes, for the CPU split
}

// floorFigures are one floor's results in the scenarios.
type floorFigures struct {
	floor
	p50, p99, fc, fc99 time.Duration
	rps                float64
	split              cpuSplit
}

// floorSamples gathers a floor's rounds before the medians are taken.
type floorSamples struct {
	p50, p99, fc, fc99 []time.Duration
	rps                []float64
	splits             []cpuSplit
}

func (s floorSamples) figures(f floor) floorFigures {
	return floorFigures{floor: f, p50: median(s.p50), p99: median(s.p99), fc: median(s.fc), fc99: median(s.fc99), rps: median(s.rps), split: medianSplit(s.splits)}
}

func (f figures) printFloors(w io.Writer) {
	for _, fl := range f.floors {
		fmt.Fprintf(w, "%-20s %s: adds p50 %s p99 %s @%d req/s | max %.0f req/s, ratio to direct %.3f (gateway/%s %.3f) | stream first content added %s (p99 %s)\n",
			fl.name, fl.what, ms(fl.p50-f.dP50), ms(fl.p99-f.dP99), rate, fl.rps, fl.rps/f.dRPS, fl.name, f.gRPS/fl.rps, ms(fl.fc-f.dFC), ms(fl.fc99-f.dFC99))
	}
	for _, fl := range f.floors {
		// Against the floor: the targets are ratios to the plain Go proxy.
		fmt.Fprintf(w, "gateway vs %-9s throughput %.2f× | added p50 %+.2f ms over it | first content %+.2f ms over it\n",
			fl.name, f.gRPS/fl.rps, float64((f.gP50-fl.p50).Microseconds())/1000, float64((f.gFC-fl.fc).Microseconds())/1000)
	}
}

// startNginx runs Debian's nginx as a reverse proxy to upstream (host:port)
// with upstream keep-alive, listening on addr, with as many workers as the
// machine has cores. It returns false when nginx is not installed.
func startNginx(t *testing.T, addr, upstream string) bool {
	bin, err := exec.LookPath("nginx")
	if err != nil {
		return false
	}
	dir := t.TempDir()
	conf := fmt.Sprintf(`daemon off;
master_process on;
worker_processes auto;
pid %[1]s/nginx.pid;
error_log stderr warn;
events { worker_connections 8192; }
http {
	access_log off;
	client_body_temp_path %[1]s/body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	client_body_buffer_size 64k;
	keepalive_requests 1000000;
	upstream vendor {
		server %[2]s;
		keepalive 512;
	}
	server {
		listen %[3]s;
		location / {
			proxy_pass http://vendor;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_buffering off;
		}
	}
}
`, dir, upstream, addr)
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	startProc(t, bin, nil, "-p", dir, "-c", path, "-e", "stderr")
	return true
}
