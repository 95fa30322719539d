#!/usr/bin/env python3
"""Offline checks of the Grafana dashboard (deploy/grafana/pgpush.json), run by
deploy/local/check-deploy.sh.

  check-grafana.py DASHBOARD                 the JSON parses; it declares exactly two
                                             data source inputs (PostgreSQL and Prometheus);
                                             every panel, target and template variable names
                                             one of them, by uid and by type; PostgreSQL
                                             targets carry rawSql, Prometheus ones an expr
  check-grafana.py --metric-names DASHBOARD  prints the pgpush_ metric names the Prometheus
                                             exprs use, one per line (check-deploy.sh --metrics
                                             looks for each in a worker's real /metrics)

Whether the SQL runs against the schema as pgpush_monitor is GrafanaDashboardTests' job.
Only the standard library is used.
"""
import json
import re
import sys

POSTGRES = "grafana-postgresql-datasource"
PROMETHEUS = "prometheus"
problems = []


def fail(message):
    problems.append(message)


def load(path):
    try:
        with open(path, encoding="utf-8") as file:
            return json.load(file)
    except (OSError, ValueError) as error:
        sys.exit(f"check-grafana.py: {path} does not parse as JSON: {error}")


def all_panels(panels):
    for panel in panels or []:
        yield panel
        yield from all_panels(panel.get("panels"))


def prometheus_exprs(dashboard):
    for panel in all_panels(dashboard.get("panels")):
        for target in panel.get("targets") or []:
            source = target.get("datasource") or panel.get("datasource") or {}
            if source.get("type") == PROMETHEUS:
                yield target.get("expr", "")


def check(dashboard):
    inputs = dashboard.get("__inputs")
    if not isinstance(inputs, list):
        fail("no __inputs list: Grafana's import would not ask for the data sources")
        inputs = []
    uids = {}
    for entry in inputs:
        if entry.get("type") == "datasource":
            uids["${" + str(entry.get("name")) + "}"] = entry.get("pluginId")
    if sorted(uids.values()) != sorted([POSTGRES, PROMETHEUS]):
        fail(f"__inputs must declare one {POSTGRES} and one {PROMETHEUS} data source, found {sorted(map(str, uids.values()))}")

    def check_source(where, source):
        if not isinstance(source, dict):
            fail(f"{where}: no data source")
            return None
        uid, kind = source.get("uid"), source.get("type")
        if uid not in uids:
            fail(f"{where}: data source uid {uid!r} is none of the inputs {sorted(uids)}")
            return None
        if kind != uids[uid]:
            fail(f"{where}: data source type {kind!r} does not match input {uid}, a {uids[uid]}")
        return uids[uid]

    if dashboard.get("schemaVersion", 0) < 36:
        fail(f"schemaVersion {dashboard.get('schemaVersion')} is older than the panel types used here")
    ids = set()
    for panel in all_panels(dashboard.get("panels")):
        title = panel.get("title", "?")
        if panel.get("id") in ids:
            fail(f"panel {title!r}: id {panel.get('id')} is used twice")
        ids.add(panel.get("id"))
        if panel.get("type") == "row":
            continue
        where = f"panel {title!r}"
        panel_kind = check_source(where, panel.get("datasource"))
        targets = panel.get("targets") or []
        if not targets:
            fail(f"{where}: no targets")
        for target in targets:
            target_where = f"{where} target {target.get('refId', '?')}"
            kind = check_source(target_where, target.get("datasource", panel.get("datasource")))
            if kind and panel_kind and kind != panel_kind:
                fail(f"{target_where}: a {kind} target in a {panel_kind} panel")
            if kind == POSTGRES and not str(target.get("rawSql", "")).strip():
                fail(f"{target_where}: a PostgreSQL target without rawSql")
            if kind == PROMETHEUS and not str(target.get("expr", "")).strip():
                fail(f"{target_where}: a Prometheus target without expr")
    for variable in (dashboard.get("templating") or {}).get("list") or []:
        if variable.get("type") == "query":
            check_source(f"variable {variable.get('name')!r}", variable.get("datasource"))


def main(arguments):
    if len(arguments) == 2 and arguments[0] == "--metric-names":
        names = set()
        for expr in prometheus_exprs(load(arguments[1])):
            names.update(re.findall(r"\bpgpush_[a-z_]+", expr))
        print("\n".join(sorted(names)))
        return 0
    if len(arguments) != 1:
        sys.exit("usage: check-grafana.py [--metric-names] DASHBOARD")
    path = arguments[0]
    dashboard = load(path)
    check(dashboard)
    for problem in problems:
        print(f"check-grafana.py: {path}: {problem}", file=sys.stderr)
    if problems:
        return 1
    panels = [p for p in all_panels(dashboard.get("panels")) if p.get("type") != "row"]
    print(f"grafana dashboard: ok ({len(panels)} panels, {sum(1 for _ in prometheus_exprs(dashboard))} Prometheus queries)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
