#!/usr/bin/env bash
# The coding-agent CLIs the agent e2e tests run, pinned, from the npm
# registry: Claude Code and Codex. Both ship native binaries in per-platform
# packages that npm installs as optional dependencies; no install script is
# run and nothing else is downloaded. Prints the folder they are in.
set -euo pipefail
cd "$(dirname "$0")/../.."

claude_ver=2.1.328
codex_ver=0.169.0
dir="$PWD/.cache/agents-$claude_ver-$codex_ver"

claude_bin() { ls "$dir"/node_modules/@anthropic-ai/claude-code-*/claude 2>/dev/null | head -1; }
codex_bin() { echo "$dir/node_modules/.bin/codex"; }

ok() {
  local c x
  c=$(claude_bin) || return 1
  x=$(codex_bin)
  [ -x "$c" ] && [ -x "$x" ] &&
    "$c" --version 2>/dev/null | grep -q "^$claude_ver " &&
    "$x" --version 2>/dev/null | grep -q " $codex_ver$"
}

if ! ok; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "==> installing nodejs and npm (Debian apt)" >&2
    if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
  fi
  echo "==> installing Claude Code $claude_ver and Codex $codex_ver from npm" >&2
  rm -rf "$dir"; mkdir -p "$dir"
  echo '{"private":true}' > "$dir/package.json"
  npm install --prefix "$dir" --no-audit --no-fund --ignore-scripts --loglevel=error \
    "@anthropic-ai/claude-code@$claude_ver" "@openai/codex@$codex_ver" >&2
  ok || { echo "agents-deps: the installed CLIs do not report the pinned versions" >&2; exit 1; }
fi
# The two binaries, one per line: Claude Code, then Codex.
claude_bin
codex_bin
