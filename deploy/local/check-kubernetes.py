"""What kubernetes-validate cannot see in deploy/kubernetes/pgpush.yaml.

kubernetes-validate checks the built-in kinds against their schemas and skips
the kinds it has no schema for (KEDA's ScaledObject and TriggerAuthentication are
custom resources). This checks the references between the documents, the KEDA
objects' required fields, and the pod settings operators asked for, so that
removing any of them fails CI.
    python3 deploy/local/check-kubernetes.py deploy/kubernetes/pgpush.yaml
"""
import sys

import yaml

filename = sys.argv[1]
with open(filename) as f:
    documents = [d for d in yaml.safe_load_all(f) if d]
errors = []


def need(condition, message):
    if not condition:
        errors.append(message)


def named(kind):
    return {d["metadata"]["name"]: d for d in documents if d.get("kind") == kind}


deployments = named("Deployment")
authentications = named("TriggerAuthentication")
scaled = named("ScaledObject")
jobs = named("Job")
need(jobs, "no Job: the migration Job is missing")
need(deployments, "no Deployment")
need(scaled, "no ScaledObject")

# KEDA: every reference resolves inside the file, and each TriggerAuthentication
# hands the PostgreSQL scaler a parameter it reads.
for name, so in scaled.items():
    spec = so.get("spec", {})
    target = spec.get("scaleTargetRef", {}).get("name")
    need(target in deployments, f"ScaledObject {name}: scaleTargetRef {target!r} is no Deployment in the file")
    need(spec.get("minReplicaCount", 0) <= spec.get("maxReplicaCount", 100), f"ScaledObject {name}: min above max")
    need(spec.get("triggers"), f"ScaledObject {name}: no triggers")
    for trigger in spec.get("triggers", []):
        need(trigger.get("type") == "postgresql", f"ScaledObject {name}: trigger type {trigger.get('type')!r}")
        metadata = trigger.get("metadata", {})
        need(isinstance(metadata.get("query"), str), f"ScaledObject {name}: trigger without a query")
        # KEDA reads metadata values as strings; a bare number is rejected by its CRD.
        need(isinstance(metadata.get("targetQueryValue"), str), f"ScaledObject {name}: targetQueryValue must be a string")
        reference = trigger.get("authenticationRef", {}).get("name")
        need(reference in authentications,
             f"ScaledObject {name}: authenticationRef {reference!r} names no TriggerAuthentication in the file")
for name, authentication in authentications.items():
    references = authentication.get("spec", {}).get("secretTargetRef", [])
    need(references, f"TriggerAuthentication {name}: no secretTargetRef")
    for reference in references:
        need(reference.get("parameter") in {"connection", "password"},
             f"TriggerAuthentication {name}: the PostgreSQL scaler reads no parameter {reference.get('parameter')!r}")
        need(reference.get("name") and reference.get("key"), f"TriggerAuthentication {name}: secret name and key needed")

# Pods: non-root, read-only, no capabilities, no escalation, the runtime's seccomp profile.
for kind, objects in (("Job", jobs), ("Deployment", deployments)):
    for name, workload in objects.items():
        pod = workload["spec"]["template"]["spec"]
        context = pod.get("securityContext", {})
        need(context.get("runAsNonRoot") is True, f"{kind} {name}: runAsNonRoot is not true")
        need(isinstance(context.get("runAsUser"), int) and context["runAsUser"] > 0,
             f"{kind} {name}: no numeric non-root runAsUser (the kubelet cannot check a named image user)")
        need(context.get("seccompProfile", {}).get("type") == "RuntimeDefault", f"{kind} {name}: seccomp is not RuntimeDefault")
        for container in pod["containers"]:
            where = f"{kind} {name}, container {container['name']}"
            own = container.get("securityContext", {})
            need(own.get("readOnlyRootFilesystem") is True, f"{where}: root file system not read-only")
            need(own.get("allowPrivilegeEscalation") is False, f"{where}: privilege escalation allowed")
            need(own.get("capabilities", {}).get("drop") == ["ALL"], f"{where}: capabilities not dropped (drop: [ALL])")
            need(own.get("runAsUser", 1) != 0 and own.get("privileged") is not True, f"{where}: runs as root or privileged")
        # A secret the non-root user must read but that is not world-readable: the
        # kubelet makes its files readable by the pod's fsGroup, so there must be one.
        for volume in pod.get("volumes", []):
            secret = volume.get("secret")
            if secret is None:
                continue
            mode = secret.get("defaultMode", 0o644)
            if not mode & 0o004:
                need(isinstance(context.get("fsGroup"), int), f"{kind} {name}: secret {volume['name']} needs fsGroup to be readable")

# The worker: its metrics address, port and probes agree.
for name, deployment in deployments.items():
    for container in deployment["spec"]["template"]["spec"]["containers"]:
        where = f"Deployment {name}, container {container['name']}"
        env = {e["name"]: e.get("value") for e in container.get("env", [])}
        address = env.get("PGPUSH_METRICS_ADDR")
        need(address is not None, f"{where}: no PGPUSH_METRICS_ADDR, so no /metrics and no probes")
        port = int(address.rsplit(":", 1)[1]) if address else None
        ports = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
        need(port in ports.values(), f"{where}: PGPUSH_METRICS_ADDR port {port} is no containerPort")
        for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
            get = container.get(probe, {}).get("httpGet", {})
            need(get.get("path") == path, f"{where}: {probe} does not GET {path}")
            probe_port = ports.get(get.get("port"), get.get("port"))
            need(probe_port == port, f"{where}: {probe} port {get.get('port')!r} is not the metrics port {port}")

for error in errors:
    print(f"ERROR {filename}: {error}")
if errors:
    sys.exit(1)
print(f"{filename}: references, KEDA objects, pod security and probes ok ({len(documents)} documents)")
