#!/usr/bin/env bash
# Sets nbagent up on this machine (idempotent), then optionally runs a job:
#   bash scripts/setup.sh          set up only
#   bash scripts/setup.sh demo     set up, then run the demo (edit + run a sample notebook)
#   bash scripts/setup.sh test     set up, then lint, type-check and run the whole test suite (all tiers)
# Python packages come from Debian when this is Debian and we are root, otherwise from ./.venv (pip).
set -euo pipefail
cd "$(dirname "$0")/.."

# jinja2: pandas' Styler renders its HTML with it (its table reaches the model; docs/output.md).
DEBIAN_PKGS="python3-ipykernel python3-jupyter-server python3-nbformat python3-nbclient python3-matplotlib python3-numpy python3-pandas python3-jinja2"
# bubblewrap: the opt-in kernel sandbox (--sandbox, docs/isolation.md). A system package: installed
# only as root on Debian; without it everything else works and `nbagent doctor` says --sandbox is off.
# tmux: the terminal test of `nbagent python` (skipped without it).
SYSTEM_PKGS="bubblewrap tmux"
# ipykernel: the versions the test suite runs on (README "Development"); Debian 12 has 6.17.
PIP_PKGS="ipykernel>=6.17,<8 jupyter_server nbformat nbclient matplotlib numpy pandas jinja2"

# Kernels of other languages the tests compare with nbclient (docs/kernels.md): optional for users,
# installed for the `test` job (as root on Debian; elsewhere their tests are skipped with the reason).
# gnuplot-nox: Octave's plotting without X. python3-ipywidgets: the widget-state test's real widgets.
KERNEL_PKGS="r-cran-irkernel octave python3-octave-kernel gnuplot-nox python3-ipywidgets"
# chromium: the `nbagent view` page's tests run in it (test/view/page.test.ts, driven by playwright-core,
# which never downloads a browser of its own); skipped without it, except under CI.
BROWSER_PKGS="chromium"
# jupyterhub: the JupyterHub backend's tests start a real hub on loopback (test/gateway/hub.stress.test.ts),
# with npm's configurable-http-proxy (a devDependency; Debian's own proxy misses a module).
HUB_PKGS="jupyterhub"
# iproute2 + iptables: the network tests put the server in a network namespace of its own (ip netns,
# veth) and lose packets with iptables' statistic match (test/gateway/netns.ts).
NET_PKGS="iproute2 iptables"

log() { printf '\033[1msetup:\033[0m %s\n' "$*" >&2; }

setup_system() {
  if command -v bwrap >/dev/null && command -v tmux >/dev/null; then return; fi
  if [ "$(id -u)" = 0 ] && [ -f /etc/debian_version ] && command -v apt-get >/dev/null; then
    log "installing Debian packages: $SYSTEM_PKGS"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $SYSTEM_PKGS >/dev/null
  else
    log "not installed (needs root): $SYSTEM_PKGS — without bubblewrap --sandbox is unavailable, without tmux its test is skipped"
  fi
}

setup_python() {
  if [ -n "${NBAGENT_PYTHON:-}" ]; then
    log "using NBAGENT_PYTHON=$NBAGENT_PYTHON as given"
    setup_system
    return
  fi
  if [ "$(id -u)" = 0 ] && [ -f /etc/debian_version ] && command -v apt-get >/dev/null; then
    local missing=""
    for p in $DEBIAN_PKGS $SYSTEM_PKGS; do
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
    done
    if [ -n "$missing" ]; then
      log "installing Debian packages:$missing"
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
    else
      log "Debian Python packages present"
    fi
    return
  fi
  setup_system
  if [ ! -x .venv/bin/python ]; then
    log "creating ./.venv"
    python3 -m venv .venv
  fi
  if ! .venv/bin/python -c "import ipykernel, nbformat, nbclient, jupyter_server, jinja2" 2>/dev/null; then
    log "installing into ./.venv: $PIP_PKGS"
    # shellcheck disable=SC2086 # one word per package; the version range has no spaces
    .venv/bin/python -m pip install -q $PIP_PKGS
  fi
}

setup_test_kernels() {
  if [ "$(id -u)" != 0 ] || [ ! -f /etc/debian_version ] || ! command -v apt-get >/dev/null; then
    log "not installed (needs root on Debian): $KERNEL_PKGS $BROWSER_PKGS $HUB_PKGS $NET_PKGS — the R, Octave, real-ipywidgets, view page, JupyterHub and network tests are skipped"
    return
  fi
  local missing=""
  for p in $KERNEL_PKGS $BROWSER_PKGS $HUB_PKGS $NET_PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
  done
  [ -z "$missing" ] && return
  log "installing the test kernels (R, Octave), browser, hub and network tools:$missing"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

setup_node() {
  local stamp=node_modules/.nbagent-lock-stamp
  if [ ! -f "$stamp" ] || ! cmp -s package-lock.json "$stamp"; then
    log "installing npm dependencies (npm ci)"
    npm ci --no-audit --no-fund --loglevel=error
    cp package-lock.json "$stamp"
  fi
  log "building"
  npm run -s build
}

setup_python
[ "${1:-}" = test ] && setup_test_kernels
setup_node
node dist/cli/nbagent.js doctor >&2 || { log "doctor reports a problem (see above)"; exit 1; }

case "${1:-}" in
  "") ;;
  demo) shift; exec node dist/cli/nbagent.js demo "$@" ;;
  test) shift; npm run -s lint; npm run -s typecheck; exec npm test -- "$@" ;;
  *) log "unknown job '$1' (use demo or test)"; exit 2 ;;
esac
