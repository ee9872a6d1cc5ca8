#!/usr/bin/env bash
# make bench: end-to-end gateway figures (as ratios against the direct path,
# measured in the same run by the same external drivers) and the Go
# micro-benchmarks. BENCH_PROFILE_DIR=dir also writes CPU and allocation
# profiles of the gateway under the fixed-rate load.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${BENCH_OUT:-.cache/bench-report.txt}
mkdir -p "$(dirname "$out")" bin

# The closed-loop driver: Debian's wrk (installed once; loopback only).
if ! command -v wrk >/dev/null 2>&1; then
	echo "==> installing wrk (apt)"
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wrk >/dev/null
fi
# A floor: Debian's nginx as a reverse proxy (installed once; run by the
# bench itself on a loopback port, never as a service).
if ! command -v nginx >/dev/null 2>&1; then
	echo "==> installing nginx-light (apt)"
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx-light >/dev/null
	# The package starts a server on :80; the bench runs its own.
	systemctl disable --now nginx >/dev/null 2>&1 || service nginx stop >/dev/null 2>&1 || true
fi
# The open-loop driver, and the plain Go proxy the gateway is compared with.
go build -o bin/loadgen ./e2e/bench/loadgen
go build -o bin/plainproxy ./e2e/bench/plainproxy

echo "== end to end: gateway vs direct (a few minutes) =="
BENCH_BIN="$PWD/bin" BENCH_REPORT="$PWD/$out.e2e" go test -tags bench -v -count=1 -run TestGatewayVersusDirect -timeout 30m ./e2e/bench/ | grep -v '^ok\|^PASS\|^=== RUN\|^--- PASS' || true
BENCH_BIN="$PWD/bin" go test -tags bench -v -count=1 -run TestFirstContent -timeout 10m ./e2e/bench/ | grep -v '^ok\|^PASS\|^=== RUN\|^--- PASS' || true
BENCH_BIN="$PWD/bin" BENCH_REPORT="$PWD/$out.e2e" go test -tags bench -v -count=1 -run TestRetryBudgetOutage -timeout 10m ./e2e/bench/ | grep -v '^ok\|^PASS\|^=== RUN\|^--- PASS' || true
echo
echo "== allocations per proxied non-stream request (real handler and journey; the fake vendor in its own process) =="
fake_log=$(mktemp)
./bin/fakeupstream -addr 127.0.0.1:0 >"$fake_log" 2>&1 &
fake_pid=$!
trap 'kill $fake_pid 2>/dev/null || true; rm -f "$fake_log"' EXIT
for _ in $(seq 50); do grep -q listening "$fake_log" && break; sleep 0.1; done
fake_url=$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$fake_log" | head -1)
BENCH_UPSTREAM_URL="$fake_url" go test -run '^$' -bench 'ProxiedRequest' -benchmem -benchtime 5000x -count=3 ./web/gateway/ | grep -E '^Benchmark'
kill $fake_pid 2>/dev/null || true
echo
echo "== memory under bursts of 9 MB bodies of 300,000 turns (peak RSS per MB in flight; RSS after the burst) =="
go test -run '^$' -bench 'BodyBurstRSS' -benchtime 2x ./web/gateway/ | grep -E '^Benchmark'
echo
echo "== configuration at scale in the store: import, publish, rollback of 500 route groups / 5,000 deployments, checked exactly =="
go test -count=1 -run TestConfigurationAtScale -v ./store/ -args -scale=large | grep -E 'scale_test|^(ok|FAIL|---)' || true
echo
echo "== micro-benchmarks =="
go test -run '^$' -bench 'RouteResolution' -benchmem -count=3 ./routing/ | grep -E '^Benchmark|ns/op'
go test -run '^$' -bench 'ParseChatRequest|ParseLarge' -benchmem -count=1 ./routing/frontdoor/ | grep -E '^Benchmark'
go test -run '^$' -bench 'Check' -benchmem -count=1 ./store/redis/limits/ | grep -E '^Benchmark'
go test -run '^$' -bench 'AllowClosed|Pick' -benchmem -count=1 ./routing/breaker/ ./store/redis/keypool/ | grep -E '^Benchmark'
go test -run '^$' -bench 'Ingest' -benchmem -count=1 -benchtime=200000x ./store/calllog/ | grep -E '^Benchmark'
echo
echo "Call-log search on 10 million rows (generates them once, ~20 min; kept in switchyard_test):"
echo "  go test -run '^\$' -bench Search -count=1 ./store/calllog/ -args -rows=10000000"
