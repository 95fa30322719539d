#!/usr/bin/env bash
# Runs every test: installs what is missing, checks the files in deploy/ with
# operators' tools (check-deploy.sh; the Compose file again against the built
# binary, and a worker's real /metrics after the suite), builds, runs the suite, a quick
# benchmark as a smoke test, the transport, queue, client and worker tests again
# under AddressSanitizer and under ThreadSanitizer, then a short libFuzzer run of
# every fuzz target. The tests start their own throwaway PostgreSQL cluster and
# TLS servers.
#   deploy/local/test.sh            # everything (about 20 minutes on 2 cores from a clean checkout)
#   deploy/local/test.sh --quick    # the suite only
set -euo pipefail
cd "$(dirname "$0")/../.."
deploy/local/install-dependencies.sh
# The container, systemd, Kubernetes and Prometheus files, checked offline with the
# tools operators use on them: seconds, before the long build.
deploy/local/check-deploy.sh

swift build --build-tests
# The Compose file's pgpush commands, flags and variables, against the binary just built.
deploy/local/check-deploy.sh --compose "$(swift build --show-bin-path)/pgpush"
# MetricsEndpointTests writes its worker's /metrics scrape to this file, which
# promtool then checks (deploy/local/check-deploy.sh --metrics).
metrics_scrape=$(mktemp)
trap 'rm -f "$metrics_scrape"' EXIT
# The fault suite kills processes and restarts PostgreSQL; it runs after the rest so
# that its load does not skew the timing-sensitive tests running beside it.
PGPUSH_METRICS_DUMP="$metrics_scrape" swift test --skip-build --skip ReliabilityTests
deploy/local/check-deploy.sh --metrics "$metrics_scrape"
swift test --skip-build --filter ReliabilityTests
echo "== worker, queue, migrate, prune and multi-worker tests again, through PgBouncer in transaction pooling mode ==" >&2
# Every connection string the tests hand out goes through a PgBouncer (pool_mode =
# transaction) in front of the test cluster; LISTEN gets a session connection of its own
# (PGPUSH_LISTEN_DATABASE_URL), as the README tells operators to run it.
PGPUSH_TEST_POOLER=pgbouncer swift test --skip-build \
    --filter 'PushWorkerTests|PushQueueTests|CompetingWorkersTests|WorkerKillTests|DatabaseOutageTests'
[ "${1:-}" = "--quick" ] && exit 0

echo "== pgpush bench --quick --check: the benchmark runs and its figures are consistent ==" >&2
# A smoke test, never a speed judgement: every row accounted for, no duplicate without
# faults, no window over the cap. One connection for the capped run: with more, the
# simulator on two shared cores counts its own delays (BENCHMARKS.md, "Capped").
.build/debug/pgpush bench --quick --check --capped-connections 1 > /dev/null

echo "== pgpush bench --pgbouncer --check: a steady run through PgBouncer and both floors ==" >&2
.build/debug/pgpush bench --scenarios steady --steady-rates 100 --steady-seconds 4 --pgbouncer --check > /dev/null

echo "== AddressSanitizer: transport, queue, worker, cores and FCM tests ==" >&2
# Leak reports come from Foundation and libcurl internals in the test runner, not from
# pgpush objects (those are counted by the LiveObjects tests), so only memory errors fail.
# Tests that assert rates or delays are left out: the sanitizer slows everything down.
# (--skip matches test ids, Module.Suite/function(), not display names.)
ASAN_OPTIONS=detect_leaks=0 swift test --sanitize=address --scratch-path .build/asan -Xswiftc -use-ld=lld \
    --filter 'PostgresTests|PushQueueTests|PushCryptoTests|HTTP2TLSTests|PushTransportTests|APNsClientTests|PushWorkerTests|LocalHTTPTests|PGPushWebTests|PGPushCoreTests|APNsCoreTests|FCMClientTests|FCMSimulatorTests|WebPushClientTests|WebPushSimulatorTests' \
    --skip 'oneConnectionNeverExceeds|answersFollowTheDefaultRetryPolicy|rateCap|answeredRequestsAreCountedFromTheirAnswers|singleStreamUntilFirstAnswer|pingTimeout|deadline'

echo "== ThreadSanitizer: transport, queue, clients, simulators and worker tests ==" >&2
# pgpush's locks are pthread mutexes (Sources/Locking) so that TSan sees them; any report
# stops the run. The same timing-sensitive tests as above are left out, and the endless-body
# attack (HostileServerTests), whose hundreds of megabytes through TLS took 87 s of both
# cores under TSan and starved the rest; the plain and ASan runs keep it.
TSAN_OPTIONS=halt_on_error=1 swift test --sanitize=thread --scratch-path .build/tsan \
    --filter 'PostgresTests|PushQueueTests|PushCryptoTests|HTTP2TLSTests|PushTransportTests|APNsClientTests|APNsSimulatorTests|PushWorkerTests|LocalHTTPTests|PGPushWebTests|FCMClientTests|FCMSimulatorTests|WebPushClientTests|WebPushSimulatorTests' \
    --skip 'oneConnectionNeverExceeds|answersFollowTheDefaultRetryPolicy|rateCap|answeredRequestsAreCountedFromTheirAnswers|singleStreamUntilFirstAnswer|pingTimeout|deadline|endlessBody'

echo "== libFuzzer: 20 s per target ==" >&2
deploy/local/fuzz.sh 20
echo "all tests, the sanitizer runs and the fuzz run passed" >&2
