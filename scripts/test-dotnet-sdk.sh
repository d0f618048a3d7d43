#!/usr/bin/env bash
# The .NET SDK's test command (sdk/dotnet/README.md, "Tests"): `npm run test:dotnet`.
# Checks for the .NET 10 SDK first; then `dotnet test sdk/dotnet`, whose suite starts the built
# gateway (dist/src/main.js) on PostgreSQL when DATABASE_URL is set, else on embedded PGlite.
# Arguments go to dotnet test (`npm run test:dotnet -- --no-build`). A test that hangs fails the
# run after 8 minutes instead of holding it (the package test packs, restores and builds a fresh app).
set -euo pipefail
cd "$(dirname "$0")/.."

REQUIRED_MAJOR=10
version="$(dotnet --version 2>/dev/null || true)"
major="${version%%.*}"
case "$major" in
  '' | *[!0-9]*) found="dotnet is not on PATH" ;;
  *) found="dotnet --version says $version" ;;
esac
if [ "$found" = "dotnet is not on PATH" ] || [ "$major" -lt "$REQUIRED_MAJOR" ]; then
  {
    echo "The .NET SDK's tests need the .NET ${REQUIRED_MAJOR} SDK ($found)."
    echo "Install it (Microsoft's package dotnet-sdk-${REQUIRED_MAJOR}.0, or its installer), then run this again."
  } >&2
  exit 1
fi

if [ ! -f dist/src/main.js ]; then
  echo "dist/src/main.js is missing: the tests start the built gateway; run \`npm run build\` first." >&2
  exit 1
fi

export DOTNET_NOLOGO=1 DOTNET_CLI_TELEMETRY_OPTOUT=1
dotnet test sdk/dotnet --blame-hang-timeout 8m --blame-hang-dump-type none "$@"
