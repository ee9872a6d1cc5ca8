#!/usr/bin/env bash
# Prepare the browser end-to-end tests without any CDN download: Debian's
# Chromium, and the playwright driver built from the npm registry at the
# version the pinned playwright-go module expects.
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v chromium >/dev/null 2>&1; then
  echo "==> installing chromium (Debian apt)" >&2
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
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
echo "$drv"
