#!/usr/bin/env bash
# The Python SDK's test command (sdk/python/README.md, "Tests"): `npm run test:python`.
# Checks its prerequisites first and names the Debian packages that bring what is missing; then
# mypy --strict and the pytest suite, which starts the built gateway (dist/src/main.js) on
# PostgreSQL when DATABASE_URL is set, else on embedded PGlite. Arguments go to pytest
# (`npm run test:python -- -k readme`).
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian's python3 (3.11) by default: a python3 earlier on PATH (pyenv's, say) may lack these
# packages. PYTHON=... picks another interpreter that has them.
PYTHON="${PYTHON:-/usr/bin/python3}"
[ -x "$PYTHON" ] || PYTHON="$(command -v python3 || true)"

missing=()
packages=()
need() { missing+=("$1"); packages+=("$2"); }

if [ -z "$PYTHON" ]; then
  need "python3" python3
else
  for pair in grpc:python3-grpcio google.protobuf:python3-protobuf pytest:python3-pytest mypy:python3-mypy cryptography:python3-cryptography uvicorn:python3-uvicorn; do
    "$PYTHON" -c "import ${pair%%:*}" >/dev/null 2>&1 || need "python module ${pair%%:*} (for $PYTHON)" "${pair#*:}"
  done
fi
command -v protoc >/dev/null || need "protoc" protobuf-compiler
command -v grpc_python_plugin >/dev/null || [ -x /usr/bin/grpc_python_plugin ] || need "grpc_python_plugin" protobuf-compiler-grpc

if [ ${#missing[@]} -gt 0 ]; then
  {
    echo "The Python SDK's tests need what is not here:"
    printf '  - %s\n' "${missing[@]}"
    echo "On Debian or Ubuntu, install what is missing with:"
    echo "  sudo apt-get install -y ${packages[*]}"
  } >&2
  exit 1
fi

if [ ! -f dist/src/main.js ]; then
  echo "dist/src/main.js is missing: the tests start the built gateway; run \`npm run build\` first." >&2
  exit 1
fi

(cd sdk/python && "$PYTHON" -m mypy)
"$PYTHON" -m pytest -q -p no:cacheprovider sdk/python/tests "$@"
