#!/usr/bin/python3
"""Structural check of deploy/kubernetes/ (no cluster or schema download here).

Rules: each object's apiVersion/kind is one Kubernetes serves; container,
probe and pod fields are from the Kubernetes API (a typo is an unknown key);
the application Pod runs sidetable as a native sidecar (an init container
with restartPolicy: Always) with its data on a PersistentVolumeClaim,
readiness and liveness probes on /health at the config's HTTP port, a grace
period covering shutdown_grace_ms, resource requests; the workers'
Deployment reads the sidecar's topic, reaches it through a Service whose
selector and ports match, and its dead-letter topic is created by the Job.
With --sidetable BIN the mounted configurations are also loaded by the real
programs (their strict loaders).

  check_manifests.py --source DIR [--sidetable BIN --worker BIN]
  check_manifests.py --source DIR --self-test
"""
import argparse
import copy
import os
import subprocess
import sys
import tempfile

import yaml

API = {"ConfigMap": "v1", "Service": "v1", "PersistentVolumeClaim": "v1", "Deployment": "apps/v1",
       "Job": "batch/v1", "NetworkPolicy": "networking.k8s.io/v1"}
# Fields of the Kubernetes API objects used here (core/v1 Container, Probe,
# PodSpec; a subset is enough: anything else is a typo or unsupported).
CONTAINER = {"name", "image", "command", "args", "env", "ports", "resources", "volumeMounts", "readinessProbe",
             "livenessProbe", "startupProbe", "securityContext", "restartPolicy", "imagePullPolicy", "envFrom",
             "workingDir", "lifecycle"}
PROBE = {"httpGet", "tcpSocket", "exec", "grpc", "initialDelaySeconds", "periodSeconds", "timeoutSeconds",
         "failureThreshold", "successThreshold", "terminationGracePeriodSeconds"}
POD = {"containers", "initContainers", "volumes", "securityContext", "terminationGracePeriodSeconds",
       "restartPolicy", "serviceAccountName", "nodeSelector", "affinity", "tolerations"}


def load(source):
    d = os.path.join(source, "deploy", "kubernetes")
    with open(os.path.join(d, "kustomization.yaml")) as f:
        kust = yaml.safe_load(f)
    objects = []
    for r in kust["resources"]:
        with open(os.path.join(d, r)) as f:
            objects += [o for o in yaml.safe_load_all(f) if o]
    return objects


def find(objects, kind, name):
    for o in objects:
        if o.get("kind") == kind and o.get("metadata", {}).get("name") == name:
            return o
    raise AssertionError(f"no {kind} {name}")


def port_of(address):
    return int(address.rsplit(":", 1)[1])


def check(objects):
    problems = []

    def rule(ok, message):
        if not ok:
            problems.append(message)

    for o in objects:
        kind = o.get("kind")
        rule(kind in API and o.get("apiVersion") == API[kind], f"{kind}: apiVersion {o.get('apiVersion')}")
        rule(bool(o.get("metadata", {}).get("name")), f"{kind}: metadata.name")
        template = o.get("spec", {}).get("template")
        if template is None:
            continue
        name = o["metadata"]["name"]
        pod = template["spec"]
        rule(set(pod) <= POD, f"{name}: unknown pod fields {sorted(set(pod) - POD)}")
        if kind == "Deployment":
            rule(o["spec"]["selector"]["matchLabels"].items() <= template["metadata"]["labels"].items(),
                 f"{name}: selector does not match the template's labels")
        volumes = {v["name"] for v in pod.get("volumes", [])}
        for c in pod.get("containers", []) + pod.get("initContainers", []):
            rule(set(c) <= CONTAINER, f"{name}/{c['name']}: unknown container fields {sorted(set(c) - CONTAINER)}")
            for p in ("readinessProbe", "livenessProbe", "startupProbe"):
                if p in c:
                    rule(set(c[p]) <= PROBE, f"{name}/{c['name']}: unknown {p} fields {sorted(set(c[p]) - PROBE)}")
            req = c.get("resources", {}).get("requests", {})
            rule("cpu" in req and "memory" in req, f"{name}/{c['name']}: resource requests (cpu, memory)")
            for m in c.get("volumeMounts", []):
                rule(m["name"] in volumes, f"{name}/{c['name']}: mounts undeclared volume {m['name']}")
            if "restartPolicy" in c:
                rule(c in pod.get("initContainers", []), f"{name}/{c['name']}: restartPolicy only on init containers")

    cm = find(objects, "ConfigMap", "orders-sidetable")
    sc = yaml.safe_load(cm["data"]["sidetable.yaml"])
    wc = yaml.safe_load(cm["data"]["worker.yaml"])
    app = find(objects, "Deployment", "orders")
    pod = app["spec"]["template"]["spec"]
    inits = {c["name"]: c for c in pod.get("initContainers", [])}
    side = inits.get("sidetable")
    rule(side is not None and side.get("restartPolicy") == "Always",
         "orders: sidetable must be an init container with restartPolicy: Always (a native sidecar)")
    side = side or {}
    ports = {p["name"]: p["containerPort"] for p in side.get("ports", [])}
    http_port = port_of(sc["sidecar"]["http"])
    rule(sc["sidecar"]["http"].startswith("0.0.0.0:"), "sidecar.http must bind 0.0.0.0 for the kubelet's probes")
    # The listener policy (docs/security.md, "Transport"): 0.0.0.0 needs an opt-out.
    rule((sc.get("security") or {}).get("insecure") is True,
         "sidetable.yaml: security.insecure must be true to listen on 0.0.0.0 without CURVE and tokens")
    rule(ports.get("http") == http_port, f"sidetable: port http {ports.get('http')} != sidecar.http {http_port}")
    zmq = [port_of(e) for e in sc["sidecar"]["listen"] if e.startswith("tcp://")]
    rule(ports.get("zmq") in zmq, f"sidetable: port zmq {ports.get('zmq')} not in sidecar.listen {zmq}")
    for p in ("readinessProbe", "livenessProbe"):
        get = side.get(p, {}).get("httpGet", {})
        rule(get.get("path") == "/health" and get.get("port") in ("http", http_port),
             f"sidetable: {p} must GET /health on the http port, got {get}")
    grace = pod.get("terminationGracePeriodSeconds", 30)
    need = int(sc["sidecar"].get("shutdown_grace_ms", 10000)) / 1000 + 2
    rule(grace >= need, f"orders: terminationGracePeriodSeconds {grace} < shutdown_grace_ms + 2 s ({need:.0f})")
    mounts = {m["name"]: m["mountPath"] for m in side.get("volumeMounts", [])}
    data = {v["name"]: v for v in pod.get("volumes", [])}.get("data", {})
    claim = data.get("persistentVolumeClaim", {}).get("claimName")
    rule(claim is not None, "orders: the data volume must be a PersistentVolumeClaim")
    rule(any(o["kind"] == "PersistentVolumeClaim" and o["metadata"]["name"] == claim for o in objects),
         f"orders: PersistentVolumeClaim {claim} is not defined")
    rule(mounts.get("data") == sc["storage"]["path"], f"sidetable: data mounted at {mounts.get('data')}, "
         f"storage.path is {sc['storage']['path']}")
    rule(app["spec"].get("replicas") == 1 and app["spec"].get("strategy", {}).get("type") == "Recreate",
         "orders: one replica, Recreate (a ReadWriteOnce store has exactly one sidecar)")
    rule(pod.get("securityContext", {}).get("runAsNonRoot") is True, "orders: runAsNonRoot")
    app_env = {e["name"]: e.get("value") for c in pod["containers"] for e in c.get("env", [])}
    rule(app_env.get("SIDETABLE_ENDPOINT") == f"tcp://127.0.0.1:{ports.get('zmq')}",
         f"app: SIDETABLE_ENDPOINT {app_env.get('SIDETABLE_ENDPOINT')} must be the sidecar on 127.0.0.1")

    # Workers: topic, endpoint through the Service, dead-letter topic created.
    topic = sc["kafka"]["topic"].replace("{sidecar}", sc["sidecar"]["id"])
    rule(wc["kafka"]["topic"] == topic, f"workers: kafka.topic {wc['kafka']['topic']} != the sidecar's {topic}")
    rule(wc["kafka"]["bootstrap"] == sc["kafka"]["bootstrap"], "workers: kafka.bootstrap differs from the sidecar's")
    svc = find(objects, "Service", "orders-sidetable")
    endpoint = wc["sidecar"]["endpoint"]
    host, port = endpoint[len("tcp://"):].rsplit(":", 1)
    svc_ports = {p["port"]: p["targetPort"] for p in svc["spec"]["ports"]}
    rule(host == svc["metadata"]["name"] and int(port) in svc_ports,
         f"workers: sidecar.endpoint {endpoint} is not the Service's name and port")
    target = svc_ports.get(int(port))
    rule(target in ("zmq", ports.get("zmq")), f"Service: targetPort {target} is not the sidecar's zmq port")
    rule(svc["spec"]["selector"].items() <= app["spec"]["template"]["metadata"]["labels"].items(),
         "Service: selector does not match the application Pod")
    wd = find(objects, "Deployment", "orders-workers")
    worker = wd["spec"]["template"]["spec"]["containers"][0]
    wports = {p["name"]: p["containerPort"] for p in worker.get("ports", [])}
    rule(wports.get("http") == port_of(wc["http"]), "workers: port http != the config's http")
    for p in ("readinessProbe", "livenessProbe"):
        get = worker.get(p, {}).get("httpGet", {})
        rule(get.get("path") == "/health", f"workers: {p} must GET /health")
    rule(wd["spec"].get("replicas", 1) >= 2, "workers: at least two replicas in the group")
    job = find(objects, "Job", "orders-sidetable-topics")
    env = {e["name"]: e["value"] for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    rule(env.get("DEAD_LETTER_TOPIC") == wc["dead_letter"]["topic"],
         f"topics Job: DEAD_LETTER_TOPIC {env.get('DEAD_LETTER_TOPIC')} != dead_letter.topic")
    rule(env.get("CHANGE_TOPIC") == topic and int(env.get("CHANGE_PARTITIONS", 0)) == sc["kafka"]["partitions"],
         "topics Job: the change topic or its partitions differ from the sidecar's")
    rule(int(env.get("REPLICATION_FACTOR", 0)) == sc["kafka"]["replication_factor"],
         "topics Job: replication differs from the sidecar's kafka.replication_factor")
    rule(env.get("BOOTSTRAP") == sc["kafka"]["bootstrap"], "topics Job: BOOTSTRAP differs from kafka.bootstrap")
    return problems


def load_with_binaries(objects, sidetable, worker):
    """The real loaders: unknown keys or bad values in the ConfigMap fail here."""
    cm = find(objects, "ConfigMap", "orders-sidetable")
    problems = []
    with tempfile.TemporaryDirectory() as d:
        for key, binary, bad_flag, expect in (("sidetable.yaml", sidetable, ["--workers", "0"], "sidecar.workers"),
                                              ("worker.yaml", worker, ["--max-attempts", "0"], "max_attempts")):
            path = os.path.join(d, key)
            with open(path, "w") as f:
                f.write(cm["data"][key])
            # A bad flag on top: exit 2 naming the flag's key proves the file itself loaded.
            r = subprocess.run([binary, "--config", path] + bad_flag, capture_output=True, text=True, timeout=30)
            if r.returncode != 2 or expect not in r.stderr:
                problems.append(f"{key}: does not load cleanly: exit {r.returncode}: {r.stderr.strip()}")
    return problems


def self_test(source):
    base = load(source)
    assert check(base) == [], check(base)

    def broken(mutate, expect):
        objs = copy.deepcopy(base)
        mutate(objs)
        problems = check(objs)
        assert any(expect in p for p in problems), f"{expect!r} not caught: {problems}"

    def pod(objs, name="orders"):
        return find(objs, "Deployment", name)["spec"]["template"]["spec"]

    def side(objs):
        return pod(objs)["initContainers"][0]

    def cfg(objs, key, mutate):
        cm = find(objs, "ConfigMap", "orders-sidetable")
        doc = yaml.safe_load(cm["data"][key])
        mutate(doc)
        cm["data"][key] = yaml.safe_dump(doc)

    broken(lambda o: side(o).pop("restartPolicy"), "native sidecar")
    broken(lambda o: side(o)["readinessProbe"]["httpGet"].update(path="/"), "readinessProbe")
    broken(lambda o: side(o).pop("livenessProbe"), "livenessProbe")
    broken(lambda o: side(o)["readinessProbe"].update(initialDelay=5), "unknown readinessProbe fields")
    broken(lambda o: side(o).update(volumeMount=[]), "unknown container fields")
    broken(lambda o: pod(o).update(terminationGracePeriodSeconds=10), "terminationGracePeriodSeconds")
    broken(lambda o: cfg(o, "sidetable.yaml", lambda d: d["sidecar"].update(shutdown_grace_ms=60000)),
           "terminationGracePeriodSeconds")
    broken(lambda o: pod(o)["volumes"][0].pop("persistentVolumeClaim"), "PersistentVolumeClaim")
    broken(lambda o: cfg(o, "sidetable.yaml", lambda d: d["storage"].update(path="/data")), "storage.path")
    broken(lambda o: cfg(o, "sidetable.yaml", lambda d: d["sidecar"].update(http="127.0.0.1:9464")), "0.0.0.0")
    broken(lambda o: cfg(o, "sidetable.yaml", lambda d: d.pop("security")), "security.insecure")
    broken(lambda o: side(o)["resources"].pop("requests"), "resource requests")
    broken(lambda o: find(o, "Deployment", "orders")["spec"].update(replicas=3), "one replica")
    broken(lambda o: cfg(o, "worker.yaml", lambda d: d["kafka"].update(topic="x")), "kafka.topic")
    broken(lambda o: cfg(o, "worker.yaml", lambda d: d["sidecar"].update(endpoint="tcp://orders:5555")),
           "Service's name")
    broken(lambda o: cfg(o, "worker.yaml", lambda d: d["dead_letter"].update(topic="x.dlq")), "DEAD_LETTER_TOPIC")
    broken(lambda o: cfg(o, "sidetable.yaml", lambda d: d["kafka"].update(partitions=6)), "partitions")
    broken(lambda o: find(o, "Service", "orders-sidetable")["spec"].update(selector={"app": "x"}), "selector")
    broken(lambda o: find(o, "Deployment", "orders-workers")["spec"].update(replicas=1), "two replicas")
    broken(lambda o: find(o, "Deployment", "orders").update(apiVersion="extensions/v1beta1"), "apiVersion")
    print("self-test: every rule caught its break")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    ap.add_argument("--sidetable")
    ap.add_argument("--worker")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        self_test(args.source)
        return 0
    objects = load(args.source)
    problems = check(objects)
    if args.sidetable and args.worker:
        problems += load_with_binaries(objects, args.sidetable, args.worker)
    for p in problems:
        print("kubernetes: " + p)
    print(f"kubernetes: {len(objects)} objects, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
