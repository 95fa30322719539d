#!/usr/bin/env python3
"""Offline checks of the Docker Compose file (deploy/compose/compose.yaml); no
container engine is needed. Run by deploy/local/check-deploy.sh.

  check-compose.py COMPOSE_FILE                 structure only
  check-compose.py COMPOSE_FILE PGPUSH_BINARY   structure, then what each service
                                                passes to pgpush, against the binary

Structure: the file parses; it has services; every depends_on target is a service
with a known condition, and service_healthy targets have a healthcheck; every named
volume a service mounts is declared under volumes, and every bind-mounted file
exists; the PostgreSQL service has a healthcheck.

With the binary, for every service that runs the pgpush image (it builds
deploy/container/Dockerfile, or uses the image such a service builds): its command
is one `pgpush --help` lists, every --flag it passes is one `pgpush COMMAND --help`
names, and every DATABASE_URL / PGPUSH_* variable it sets is one that help names.
The image's entrypoint is pgpush, so a service must not replace it.

Needs PyYAML (Debian python3-yaml).
"""
import os
import re
import shlex
import subprocess
import sys

import yaml

DOCKERFILE = "deploy/container/Dockerfile"
CONDITIONS = {"service_started", "service_healthy", "service_completed_successfully"}
VARIABLE = re.compile(r"^(DATABASE_URL|PGPUSH_[A-Z0-9_]+)$")
problems = []


def fail(message):
    problems.append(message)


def depends_on(service):
    """The targets and their conditions, from the list or the mapping form."""
    value = service.get("depends_on") or {}
    if isinstance(value, list):
        return {name: "service_started" for name in value}
    if isinstance(value, dict):
        return {name: (options or {}).get("condition", "service_started") for name, options in value.items()}
    return {}


def volume_mounts(service):
    """(kind, source) of each mount: kind is "volume" or "bind"."""
    for mount in service.get("volumes") or []:
        if isinstance(mount, str):
            source = mount.split(":", 1)[0] if ":" in mount else None
            if source is None:
                continue  # an anonymous volume
            kind = "bind" if source.startswith((".", "/", "~")) else "volume"
            yield kind, source
        elif isinstance(mount, dict) and mount.get("source"):
            yield mount.get("type", "volume"), mount["source"]


def environment(service):
    value = service.get("environment") or {}
    if isinstance(value, list):
        return [entry.split("=", 1)[0] for entry in value]
    return list(value)


def check_structure(path, compose):
    services = compose.get("services")
    if not isinstance(services, dict) or not services:
        fail("no services")
        return {}
    declared = set((compose.get("volumes") or {}).keys())
    folder = os.path.dirname(os.path.abspath(path))
    for name, service in services.items():
        if not isinstance(service, dict):
            fail(f"service {name}: not a mapping")
            continue
        if not service.get("image") and not service.get("build"):
            fail(f"service {name}: neither image nor build")
        for target, condition in depends_on(service).items():
            if target not in services:
                fail(f"service {name}: depends_on names {target}, which is not a service")
                continue
            if condition not in CONDITIONS:
                fail(f"service {name}: depends_on {target} with unknown condition {condition}")
            if condition == "service_healthy" and not (services[target] or {}).get("healthcheck"):
                fail(f"service {name}: waits for {target} to be healthy, but {target} has no healthcheck")
        for kind, source in volume_mounts(service):
            if kind == "volume" and source not in declared:
                fail(f"service {name}: mounts volume {source}, which is not declared under volumes")
            if kind == "bind" and not os.path.exists(os.path.join(folder, os.path.expanduser(source))):
                fail(f"service {name}: bind-mounts {source}, which does not exist beside {path}")
        healthcheck = service.get("healthcheck")
        if healthcheck is not None and not healthcheck.get("disable") and not healthcheck.get("test"):
            fail(f"service {name}: a healthcheck without test")
    postgres = [name for name, service in services.items()
                if str((service or {}).get("image", "")).split(":")[0].split("/")[-1] == "postgres"
                and not (service or {}).get("entrypoint")]
    if not postgres:
        fail("no PostgreSQL service (image postgres) running the server")
    for name in postgres:
        if not (services[name].get("healthcheck") or {}).get("test"):
            fail(f"service {name}: PostgreSQL without a healthcheck (the migration waits for service_healthy)")
    return services


def pgpush_services(services):
    """The services that run the image built from deploy/container/Dockerfile."""
    built = {}
    for name, service in services.items():
        build = service.get("build")
        dockerfile = build.get("dockerfile", "Dockerfile") if isinstance(build, dict) else None
        if dockerfile and os.path.normpath(dockerfile) == os.path.normpath(DOCKERFILE):
            built[name] = service.get("image")
    images = {image for image in built.values() if image}
    if not built:
        fail(f"no service builds {DOCKERFILE}")
    return [name for name, service in services.items() if name in built or service.get("image") in images]


def help_text(binary, *arguments):
    run = subprocess.run([binary, *arguments, "--help"], capture_output=True, text=True, timeout=30)
    return run.stdout + run.stderr


def check_pgpush_services(services, binary):
    overview = help_text(binary)
    commands = set()
    listing = False
    for line in overview.splitlines():
        if line.strip() == "Commands:":
            listing = True
        elif listing and line.startswith("  ") and line.strip():
            commands.add(line.split()[0])
        elif listing and not line.strip():
            listing = False
    if not commands:
        fail(f"{binary} --help lists no commands")
        return
    helps = {}
    for name in pgpush_services(services):
        service = services[name]
        if service.get("entrypoint"):
            fail(f"service {name}: replaces the image's entrypoint (pgpush); the check reads command as pgpush's arguments")
            continue
        command = service.get("command")
        if isinstance(command, str):
            command = shlex.split(command)
        if not command:
            command = ["run"]  # the image's CMD
        command = [str(word) for word in command]
        if command[0] not in commands:
            fail(f"service {name}: runs `pgpush {command[0]}`, which is not a pgpush command ({', '.join(sorted(commands))})")
            continue
        if command[0] not in helps:
            helps[command[0]] = help_text(binary, command[0])
        text = helps[command[0]]
        flags = set(re.findall(r"(?<![\w-])--[a-z0-9][a-z0-9-]*", text))
        variables = set(re.findall(r"\b(?:DATABASE_URL|PGPUSH_[A-Z0-9_]+)\b", text))
        for word in command[1:]:
            if word.startswith("--"):
                flag = word.split("=", 1)[0]
                if flag not in flags:
                    fail(f"service {name}: `pgpush {command[0]}` has no flag {flag} (see pgpush {command[0]} --help)")
        for variable in environment(service):
            if VARIABLE.match(variable) and variable not in variables:
                fail(f"service {name}: `pgpush {command[0]} --help` names no variable {variable}")


def main(arguments):
    if len(arguments) not in (1, 2):
        sys.exit("usage: check-compose.py COMPOSE_FILE [PGPUSH_BINARY]")
    path = arguments[0]
    try:
        with open(path, encoding="utf-8") as file:
            compose = yaml.safe_load(file)
    except (OSError, yaml.YAMLError) as error:
        sys.exit(f"check-compose.py: {path} does not parse: {error}")
    if not isinstance(compose, dict):
        sys.exit(f"check-compose.py: {path} is not a mapping")
    services = check_structure(path, compose)
    checked = "structure"
    if len(arguments) == 2 and services:
        binary = arguments[1]
        if not os.access(binary, os.X_OK):
            sys.exit(f"check-compose.py: {binary} is not an executable pgpush binary")
        check_pgpush_services(services, binary)
        checked = f"structure, and commands, flags and variables against {binary}"
    for problem in problems:
        print(f"check-compose.py: {path}: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"compose file: ok ({len(services)} services; {checked})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
