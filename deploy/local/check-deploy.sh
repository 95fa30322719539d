#!/usr/bin/env bash
# Checks the files in deploy/ with the tools operators use on them, offline, in
# a few seconds. Each check fails when its file is broken, not merely when it
# is missing:
#   - the container image's build context, laid out exactly as the Dockerfile's
#     COPY lines lay it out, passes `swift package describe` (no container engine
#     is needed, and a manifest path the Dockerfile forgot fails here);
#   - the systemd unit is rated at most 3.0 by `systemd-analyze security --offline`
#     and does not restart a worker that exited 2 (bad settings);
#   - the Kubernetes manifests pass `kubernetes-validate --strict`, and what it
#     skips (KEDA's custom resources, references, pod security) passes
#     deploy/local/check-kubernetes.py;
#   - the Prometheus alert rules pass `promtool check rules` and their unit tests
#     (`promtool test rules`);
#   - the Grafana dashboard parses and every panel, target and variable reads one
#     of its two data source inputs (deploy/local/check-grafana.py; its SQL runs in
#     GrafanaDashboardTests).
#   - the Compose file's structure: depends_on targets and conditions, declared
#     volumes, bind-mounted files, health checks (deploy/local/check-compose.py).
# With --metrics FILE it checks a worker's real /metrics scrape instead (test.sh
# has MetricsEndpointTests write one): `promtool check metrics`, and every pgpush_
# metric the alert rules and the dashboard's Prometheus queries use is in it.
# With --compose BINARY (test.sh, after the build) it checks that every Compose
# service running the pgpush image passes a command, flags and DATABASE_URL/PGPUSH_*
# variables that the binary's --help names.
# The tools come from deploy/local/install-dependencies.sh.
#   deploy/local/check-deploy.sh
#   deploy/local/check-deploy.sh --metrics FILE
#   deploy/local/check-deploy.sh --compose .build/debug/pgpush
set -euo pipefail
cd "$(dirname "$0")/../.."
tools=.build/deploy-tools

if [ "${1:-}" = "--metrics" ]; then
    scrape=${2:?"usage: check-deploy.sh --metrics FILE"}
    echo "== Prometheus: promtool check metrics on a worker's real /metrics ==" >&2
    # An empty file means the test that writes it did not run: that fails too.
    [ -s "$scrape" ] || { echo "check-deploy.sh: $scrape is empty or missing: MetricsEndpointTests did not write the scrape" >&2; exit 1; }
    "$tools/bin/promtool" check metrics < "$scrape" \
        || { echo "check-deploy.sh: promtool check metrics rejects the worker's /metrics output" >&2; exit 1; }
    # An alert on a metric the worker never exports would stay silent forever.
    missing=0
    for metric in $(grep -oE 'pgpush_[a-z_]+' deploy/prometheus/pgpush-alerts.yaml | sort -u); do
        # A histogram's _bucket, _sum and _count series are typed under its base name.
        base=$(echo "$metric" | sed -E 's/_(bucket|sum|count)$//')
        grep -qE "^# TYPE ($metric|$base) " "$scrape" || { echo "check-deploy.sh: the alert rules use $metric, which the worker does not export" >&2; missing=1; }
    done
    # A dashboard panel on a metric the worker never exports would stay empty.
    dashboard_metrics=$(python3 deploy/local/check-grafana.py --metric-names deploy/grafana/pgpush.json)
    [ -n "$dashboard_metrics" ] || { echo "check-deploy.sh: no pgpush_ metric found in the dashboard's Prometheus queries" >&2; exit 1; }
    for metric in $dashboard_metrics; do
        base=$(echo "$metric" | sed -E 's/_(bucket|sum|count)$//')
        grep -qE "^# TYPE ($metric|$base) " "$scrape" || { echo "check-deploy.sh: the Grafana dashboard uses $metric, which the worker does not export" >&2; missing=1; }
    done
    [ "$missing" -eq 0 ] || exit 1
    echo "worker /metrics: ok (alert rules and dashboard)" >&2
    exit 0
fi

if [ "${1:-}" = "--compose" ]; then
    binary=${2:?"usage: check-deploy.sh --compose PGPUSH_BINARY"}
    echo "== Compose: each service passes pgpush only commands, flags and variables the built binary knows ==" >&2
    python3 deploy/local/check-compose.py deploy/compose/compose.yaml "$binary"
    exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== container: the Dockerfile's build context holds what Package.swift declares ==" >&2
# Only the build stage (the first FROM up to the next FROM) copies from the
# context; the runtime stage copies from the build stage (COPY --from=...).
# Docker resolves a COPY destination against WORKDIR; the check does the same
# inside a scratch root so that `swift package describe` runs in the folder the
# RUN line runs in.
dockerfile=deploy/container/Dockerfile
[ -e .dockerignore ] && { echo "check-deploy.sh: .dockerignore is not modelled by this check; extend it first" >&2; exit 1; }
root="$work/context"
workdir=/
stage=0
copies=0
# Continuation lines are joined first so that a COPY split over lines is read whole.
while read -r instruction rest; do
    case "${instruction^^}" in
        FROM) stage=$((stage + 1)) ;;
        WORKDIR) [ "$stage" -eq 1 ] && { case "$rest" in /*) workdir=$rest ;; *) workdir="$workdir/$rest" ;; esac; } ;;
        COPY|ADD)
            [ "$stage" -eq 1 ] || continue
            read -r -a words <<< "$rest"
            case "${words[0]}" in
                --from=*) continue ;;
                --*|\[*) echo "check-deploy.sh: unsupported COPY form in $dockerfile: $instruction $rest" >&2; exit 1 ;;
            esac
            count=${#words[@]}
            [ "$count" -ge 2 ] || { echo "check-deploy.sh: COPY without a destination: $rest" >&2; exit 1; }
            destination=${words[$((count - 1))]}
            case "$destination" in /*) ;; *) destination="$workdir/$destination" ;; esac
            for source in "${words[@]:0:$((count - 1))}"; do
                [ -e "$source" ] || { echo "check-deploy.sh: $dockerfile copies $source, which is not in the repository" >&2; exit 1; }
                # As Docker does: a folder source copies its contents, not itself; a file
                # lands inside the destination when that names a folder (ends in /, or
                # several sources), else it becomes the destination.
                if [ -d "$source" ]; then
                    mkdir -p "$root$destination"
                    cp -a "$source/." "$root$destination/"
                elif [ "$count" -gt 2 ] || [[ "$destination" == */ ]] || [ -d "$root$destination" ]; then
                    mkdir -p "$root$destination"
                    cp -a "$source" "$root$destination/"
                else
                    mkdir -p "$(dirname "$root$destination")"
                    cp -a "$source" "$root$destination"
                fi
            done
            copies=$((copies + 1))
            ;;
    esac
done < <(sed -e ':join' -e '/\\$/{N;s/\\\n//;b join}' "$dockerfile")
[ "$copies" -gt 0 ] || { echo "check-deploy.sh: no COPY found in the build stage of $dockerfile" >&2; exit 1; }
# The build stage's own command starts with reading the manifest: every target's
# folder must be there. Scratch state stays in the temporary folder.
(cd "$root$workdir" && swift package --scratch-path "$work/scratch" describe >/dev/null) \
    || { echo "check-deploy.sh: swift package describe fails in the build context $dockerfile lays out" >&2; exit 1; }
# The RUN line copies the migrations into the image; the worker needs them to migrate.
ls "$root$workdir"/sql/*.sql >/dev/null 2>&1 \
    || { echo "check-deploy.sh: the build context lacks sql/*.sql, which the image installs for pgpush migrate" >&2; exit 1; }
echo "container build context: ok ($copies COPY lines)" >&2

echo "== systemd: each unit's exposure (systemd-analyze security --offline) is at most 3.0 ==" >&2
for unit in deploy/systemd/*.service; do
    # --threshold counts in tenths: 30 is an exposure of 3.0. --offline reads the file
    # alone, so no running systemd is needed.
    report=$(systemd-analyze security --offline=yes --threshold=30 "$unit" 2>&1) || {
        echo "$report" | grep -E '✗|Overall' >&2 || echo "$report" >&2
        echo "check-deploy.sh: $unit is rated above 3.0 (or systemd-analyze could not read it)" >&2
        exit 1
    }
    echo "$report" | grep 'Overall exposure level' >&2
done
unit=deploy/systemd/pgpush.service
# A settings error exits 2 and fails the same way on every start: the unit must not restart it.
for setting in 'Restart=on-failure' 'RestartPreventExitStatus=2'; do
    grep -qx "$setting" "$unit" || { echo "check-deploy.sh: $unit lacks $setting" >&2; exit 1; }
done

echo "== Kubernetes: kubernetes-validate --strict, then what it cannot check ==" >&2
manifest=deploy/kubernetes/pgpush.yaml
# --strict rejects fields the schema does not know (a misspelt securityContext key
# is otherwise ignored by the API server). kubernetes-validate has no schema for
# custom resources: it prints a WARN for them and passes. Only KEDA's kinds may be
# skipped that way; any other skipped kind (a misspelt Deployment) fails here.
report=$("$tools/bin/kubernetes-validate" --strict "$manifest" 2>&1) || {
    echo "$report" >&2
    echo "check-deploy.sh: kubernetes-validate rejects $manifest" >&2
    exit 1
}
echo "$report" >&2
unexpected=$(echo "$report" | grep -v '^INFO ' \
    | grep -vE "^WARN $manifest Couldn't find schema for kind (ScaledObject|TriggerAuthentication) with api version keda\.sh/v1alpha1 " || true)
[ -z "$unexpected" ] || { echo "check-deploy.sh: kubernetes-validate skipped or flagged more than KEDA's kinds:" >&2; echo "$unexpected" >&2; exit 1; }
# The KEDA objects, the references between documents and the pod settings.
"$tools/venv/bin/python" deploy/local/check-kubernetes.py "$manifest" >&2

echo "== Prometheus: the alert rules parse, and each alert fires on the series it is meant for ==" >&2
"$tools/bin/promtool" check rules deploy/prometheus/pgpush-alerts.yaml >&2
"$tools/bin/promtool" test rules deploy/prometheus/pgpush-alerts.test.yaml >&2
echo "== Compose: services, depends_on, volumes and health checks ==" >&2
# Only the structure here: the pgpush commands, flags and variables need the built
# binary, which does not exist yet; test.sh runs --compose after the build.
python3 deploy/local/check-compose.py deploy/compose/compose.yaml

echo "== Grafana: the dashboard parses and each panel reads one of its two data source inputs ==" >&2
python3 deploy/local/check-grafana.py deploy/grafana/pgpush.json
echo "deploy checks passed" >&2
