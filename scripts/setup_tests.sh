#!/usr/bin/env bash
# Install everything the test suite needs, on Debian/Ubuntu with Python >= 3.11:
#   system tools: bubblewrap (the sandbox), ripgrep (grep tool), tmux (REPL tests), node + npm (MCP servers),
#                 systemd-analyze (the deploy/systemd units),
#                 chromium (renders the HTML trace export in a headless browser)
#   python: a .venv with the package and its test extras
#   node:   the real MCP servers the gateway tests run (tests/node)
# Runs as root (CI) or with sudo; apt is skipped when every tool is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v rg >/dev/null || need+=(ripgrep)
command -v git >/dev/null || need+=(git)
command -v tmux >/dev/null || need+=(tmux)
command -v node >/dev/null || need+=(nodejs)
command -v npm >/dev/null || need+=(npm)
command -v openssl >/dev/null || need+=(openssl)
# systemd-analyze verifies deploy/systemd/ (tests/unit/deploy/test_systemd_units.py)
command -v systemd-analyze >/dev/null || need+=(systemd)
command -v chromium >/dev/null || need+=(chromium)
python3 -c 'import ensurepip' 2>/dev/null || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing with apt-get: ${need[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'

if [ -f tests/node/package.json ]; then
  # Trust the system CA store too (a site proxy's CA lives there); node otherwise uses only its own.
  if [ -z "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f /etc/ssl/certs/ca-certificates.crt ]; then
    export NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
  fi
  if [ -f tests/node/package-lock.json ]; then
    npm ci --prefix tests/node --no-audit --no-fund --loglevel=error
  else
    npm install --prefix tests/node --no-audit --no-fund --loglevel=error
  fi
fi
echo "test setup done: run .venv/bin/python -m pytest -q -n 3 --dist loadscope"
