#!/usr/bin/env bash
# Installs the extra interop clients that tests/interop/test_kcat_kafkajs.py drives:
#   * kcat (librdkafka's command-line client), the Debian package `kcat`;
#   * kafkajs (a pure JavaScript client) with npm, into .cache/npm/ (override: KWIRE_NPM_DIR).
# Idempotent: what is already there is kept. Run by `make interop`; needs apt-get (root or sudo)
# for kcat and node/npm for kafkajs.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
NPM_DIR=${KWIRE_NPM_DIR:-$ROOT/.cache/npm}
KAFKAJS_VERSION=2.2.4

if command -v kcat >/dev/null 2>&1; then
    echo "kcat: $(command -v kcat)"
else
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then
        SUDO=sudo
    fi
    # A fresh container has no package lists: update them first (a failure is not fatal when
    # the lists are already there).
    $SUDO apt-get update -qq || echo "apt-get update failed; trying the install anyway" >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends kcat
    echo "kcat: $(command -v kcat)"
fi

if [ -f "$NPM_DIR/node_modules/kafkajs/package.json" ]; then
    echo "kafkajs: $NPM_DIR/node_modules/kafkajs"
else
    command -v npm >/dev/null 2>&1 || { echo "npm is needed for kafkajs (apt-get install nodejs npm)" >&2; exit 1; }
    mkdir -p "$NPM_DIR"
    npm install --prefix "$NPM_DIR" --no-audit --no-fund --no-save --loglevel=error "kafkajs@$KAFKAJS_VERSION"
    echo "kafkajs: $NPM_DIR/node_modules/kafkajs"
fi
