"""Stubs generated from proto/pdp.proto by ../../generate.sh; do not edit."""
