#!/usr/bin/env bash
# Prepare the browser end-to-end tests without any CDN download: Debian's
# Chromium, the playwright driver built from the npm registry at the
# version the pinned playwright-go module expects, and axe-core (the
# accessibility checker the console walk injects into every page).
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v chromium >/dev/null 2>&1; then
  echo "==> installing chromium (Debian apt)" >&2
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
# promtool checks the shipped Prometheus alerting rules (web/metrics/alerts).
if ! command -v promtool >/dev/null 2>&1; then
  echo "==> installing prometheus for promtool (Debian apt)" >&2
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  # Only promtool is wanted: the package starts a Prometheus server on
  # :9090 (make demo's fake vendor port); stop it and keep it stopped.
  $SUDO systemctl disable --now prometheus >/dev/null 2>&1 || $SUDO service prometheus stop >/dev/null 2>&1 || true
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "==> installing nodejs and npm (Debian apt)" >&2
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi

go mod download github.com/playwright-community/playwright-go >&2
moddir=$(go list -m -f '{{.Dir}}' github.com/playwright-community/playwright-go)
ver=$(sed -n 's/.*playwrightCliVersion *= *"\([^"]*\)".*/\1/p' "$moddir/run.go")
drv="$PWD/.cache/playwright-driver-$ver"
if [ ! -x "$drv/node" ] || [ ! -f "$drv/package/cli.js" ]; then
  echo "==> building the playwright $ver driver from npm" >&2
  rm -rf "$drv"; mkdir -p "$drv"
  npm pack "playwright-core@$ver" --pack-destination "$drv" --silent >/dev/null
  tar -xzf "$drv/playwright-core-$ver.tgz" -C "$drv" && rm -f "$drv"/*.tgz
  ln -sfn "$(command -v node)" "$drv/node"
fi
# axe-core, pinned: e2e/walk_test.go reads .cache/axe-core/axe.min.js.
axe_ver=4.14.1
axe="$PWD/.cache/axe-core"
if [ "$(cat "$axe/VERSION" 2>/dev/null)" != "$axe_ver" ] || [ ! -f "$axe/axe.min.js" ]; then
  echo "==> fetching axe-core $axe_ver from npm" >&2
  tmp=$(mktemp -d)
  npm pack "axe-core@$axe_ver" --pack-destination "$tmp" --silent >/dev/null
  tar -xzf "$tmp/axe-core-$axe_ver.tgz" -C "$tmp" package/axe.min.js
  rm -rf "$axe"; mkdir -p "$axe"
  install -m 0644 "$tmp/package/axe.min.js" "$axe/axe.min.js"
  echo "$axe_ver" > "$axe/VERSION"
  rm -rf "$tmp"
fi
echo "$drv"
