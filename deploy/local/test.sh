#!/usr/bin/env bash
# Runs every test: installs what is missing, builds, and runs the suite.
# The tests start their own throwaway PostgreSQL cluster and TLS servers.
set -euo pipefail
cd "$(dirname "$0")/../.."
deploy/local/install-dependencies.sh
swift build --build-tests
swift test --skip-build "$@"
