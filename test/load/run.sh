#!/usr/bin/env bash
# npm run test:load (docs/load-suite.md): builds the gateway when its sources are newer than the
# build, compiles the suite, and runs it. Its exit status is the suite's.
set -euo pipefail
cd "$(dirname "$0")/../.."

newest_build="$(find dist/src -name '*.js' -printf '%T@ %p\n' 2>/dev/null | sort -n | tail -n 1 | cut -d' ' -f2- || true)"
if [ -z "$newest_build" ] || [ ! -f dist/src/main.js ] || [ ! -f dist/src/sidecar/main.js ] ||
  [ -n "$(find src migrations proto -newer "$newest_build" ! -name '*.spec.ts' -print -quit)" ]; then
  npm run build
fi
npx tsc -p test/load/tsconfig.json
exec node dist/test/load/run.js
