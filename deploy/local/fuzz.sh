#!/usr/bin/env bash
# Fuzzes every input pgpush takes from outside with libFuzzer (see Fuzz/README.md).
#   deploy/local/fuzz.sh              # 30 s per target (what CI runs)
#   deploy/local/fuzz.sh 900          # the long run: 15 minutes per target, an hour in all
# A crash leaves its input in Fuzz/crashes/ and exits non-zero; add the input to
# Fuzz/corpus/<target>/ once fixed, so the regression tests replay it forever.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-30}
scratch=.build/fuzz
swift build -c release --product pgpush-fuzz --scratch-path "$scratch" \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING -Xswiftc -use-ld=lld >&2
binary="$scratch/release/pgpush-fuzz"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
for target in payload error-body configuration simulator-request fcm-answer fcm-payload http1-answer webpush-input; do
    mkdir -p "$work/$target" "$work/artifacts-$target"
    cp Fuzz/corpus/$target/* "$work/$target/"
    echo "fuzzing $target for ${seconds}s" >&2
    if ! PGPUSH_FUZZ_TARGET=$target "$binary" "$work/$target" -max_total_time="$seconds" -max_len=8192 \
            -artifact_prefix="$work/artifacts-$target/" -print_final_stats=1 2>"$work/$target.log"; then
        mkdir -p Fuzz/crashes
        cp "$work/artifacts-$target/"* Fuzz/crashes/ 2>/dev/null || true
        tail -40 "$work/$target.log" >&2
        echo "fuzz: $target crashed; input saved in Fuzz/crashes/" >&2
        status=1
    else
        grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$work/$target.log" | sed "s/^/  $target /" >&2
    fi
done
exit $status
