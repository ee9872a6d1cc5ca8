#!/usr/bin/env bash
# Jaeger all-in-one for the trace tests (e2e/traces), built from its Go
# module at the version pinned by the separate tools module
# e2e/tools/jaeger (its dependencies stay out of the main go.mod). Built
# once into .cache/bin/jaeger, rebuilt only when missing. Prints its path.
set -euo pipefail
cd "$(dirname "$0")/../.."

bin="$PWD/.cache/bin/jaeger"
if [ ! -x "$bin" ]; then
  echo "==> building Jaeger from its Go module (once; several minutes)" >&2
  mkdir -p "$(dirname "$bin")"
  (cd e2e/tools/jaeger && go build -o "$bin" github.com/jaegertracing/jaeger/cmd/jaeger)
fi
echo "$bin"
