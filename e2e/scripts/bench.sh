#!/usr/bin/env bash
# make bench: end-to-end gateway figures (as ratios against the direct path,
# measured in the same run) and the Go micro-benchmarks.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${BENCH_OUT:-.cache/bench-report.txt}
mkdir -p "$(dirname "$out")"
echo "== end to end: gateway vs direct (this takes a few minutes) =="
BENCH_BIN="$PWD/bin" BENCH_REPORT="$PWD/$out.e2e" go test -tags bench -v -count=1 -run TestGatewayVersusDirect -timeout 30m ./e2e/bench/ | grep -v '^ok\|^PASS\|^=== RUN\|^--- PASS' || true
BENCH_BIN="$PWD/bin" BENCH_REPORT="$PWD/$out.e2e" go test -tags bench -v -count=1 -run TestRetryBudgetOutage -timeout 10m ./e2e/bench/ | grep -v '^ok\|^PASS\|^=== RUN\|^--- PASS' || true
echo
echo "== micro-benchmarks =="
go test -run '^$' -bench 'RouteResolution' -benchmem -count=3 ./routing/ | grep -E '^Benchmark|ns/op'
go test -run '^$' -bench 'ParseChatRequest' -benchmem -count=1 ./routing/adapter/ | grep -E '^Benchmark'
go test -run '^$' -bench 'Check' -benchmem -count=1 ./store/redis/limits/ | grep -E '^Benchmark'
go test -run '^$' -bench 'AllowClosed|Pick' -benchmem -count=1 ./routing/breaker/ ./store/redis/keypool/ | grep -E '^Benchmark'
go test -run '^$' -bench 'Ingest' -benchmem -count=1 -benchtime=200000x ./store/calllog/ | grep -E '^Benchmark'
echo
echo "Call-log search on 10 million rows (generates them once, ~20 min; kept in switchyard_test):"
echo "  go test -run '^\$' -bench Search -count=1 ./store/calllog/ -args -rows=10000000"
