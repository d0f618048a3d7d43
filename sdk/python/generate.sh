#!/bin/sh
# Writes the gRPC stubs of proto/pdp.proto into agentgov_sdk/_generated/ (or into $1), with
# Debian's protoc and gRPC Python plugin (apt-get install protobuf-compiler protobuf-compiler-grpc).
# The proto is staged under the package's path so the stubs import each other as
# `agentgov_sdk._generated.pdp_pb2`, not as a top-level module.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here}
plugin=${GRPC_PYTHON_PLUGIN:-$(command -v grpc_python_plugin || echo /usr/bin/grpc_python_plugin)}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/agentgov_sdk/_generated" "$out/agentgov_sdk/_generated"
cp "$here/../../proto/pdp.proto" "$stage/agentgov_sdk/_generated/pdp.proto"
protoc -I "$stage" --python_out="$out" --pyi_out="$out" --grpc_python_out="$out" \
  --plugin=protoc-gen-grpc_python="$plugin" "$stage/agentgov_sdk/_generated/pdp.proto"
