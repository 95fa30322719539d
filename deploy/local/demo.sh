#!/usr/bin/env bash
# The demo in one command on a fresh Debian machine: installs what is missing,
# builds pgpush, and runs `pgpush demo` (throwaway PostgreSQL, APNs simulator,
# a worker, a report; everything is removed at exit). Extra arguments go to
# `pgpush demo`, e.g. deploy/local/demo.sh --alerts 1000. With DATABASE_URL set
# the demo uses that database instead of a throwaway one.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v swift >/dev/null; then
    echo "demo.sh: the Swift 6 toolchain is needed (https://www.swift.org/install/linux/): swift is not on PATH" >&2
    exit 1
fi
deploy/local/install-dependencies.sh
# A debug build of the one product: the quickest build that runs the demo
# (about 1–3 minutes the first time on 2 cores; seconds afterwards). Build
# output goes to stderr, so stdout holds only the report.
echo "demo.sh: building pgpush (swift build --product pgpush)…" >&2
swift build --product pgpush >&2
exec "$(swift build --product pgpush --show-bin-path)/pgpush" demo "$@"
