#!/usr/bin/python3
"""Structural check of deploy/kubernetes/ (no cluster or schema download here).

Rules: each object's apiVersion/kind is one Kubernetes serves; container,
probe and pod fields are from the Kubernetes API (a typo is an unknown key);
the application Pod runs sidetable as a native sidecar (an init container
with restartPolicy: Always) with its data on a PersistentVolumeClaim,
readiness and liveness probes on /health at the config's HTTP port (the
workers: readiness on /ready, liveness on /health), a grace
period covering shutdown_grace_ms, resource requests; the workers'
Deployment reads the sidecar's topic, reaches it through a Service whose
selector and ports match, and its dead-letter topic is created by the Job.
With --sidetable BIN the mounted configurations are also loaded by the real
programs (their strict loaders).

deploy/kubernetes/scale-out (three members of one cluster, docs/scale-out.md):
at least two replicas; cluster.service on with acks: replicated; every
member's id distinct and its advertised endpoint its own Pod IP (downward
API) on a port it listens on, its containerPort `peer`, the headless
Service's port and the one port the NetworkPolicy opens between the members
(and only to them); one data volume per member; the topics Job's script,
run against stand-ins for kafka-topics.sh and kafka-configs.sh, creates and
re-applies the change topic (kafka.partitions partitions, not compacted,
retention.ms and retention.bytes -1, min.insync.replicas 2 of replication 3),
the cluster topic (1 partition, compacted) and the dead-letter topic, and
fails on a change topic with another partition count; each member's
configuration (the ConfigMap plus its expanded args) passes the real
loader's validation, cluster section included (--sidetable BIN).

With --smoke KAFKA_MOCK the scale-out example's sidecars are started as the
StatefulSet starts them, each on a loopback address of its own standing in for
its Pod IP, around a Kafka stand-in, and must form one cluster that answers
for every row through every member (tests/deploy_common/smoke_cluster.py).

  check_manifests.py --source DIR [--sidetable BIN --worker BIN]
  check_manifests.py --source DIR --self-test [--sidetable BIN]
  check_manifests.py --source DIR --sidetable BIN --smoke KAFKA_MOCK
"""
import argparse
import copy
import os
import subprocess
import sys
import tempfile

import yaml

API = {"ConfigMap": "v1", "Service": "v1", "PersistentVolumeClaim": "v1", "Deployment": "apps/v1",
       "StatefulSet": "apps/v1", "Job": "batch/v1", "NetworkPolicy": "networking.k8s.io/v1",
       "PodDisruptionBudget": "policy/v1"}
# Fields of the Kubernetes API objects used here (core/v1 Container, Probe,
# PodSpec; a subset is enough: anything else is a typo or unsupported).
CONTAINER = {"name", "image", "command", "args", "env", "ports", "resources", "volumeMounts", "readinessProbe",
             "livenessProbe", "startupProbe", "securityContext", "restartPolicy", "imagePullPolicy", "envFrom",
             "workingDir", "lifecycle"}
PROBE = {"httpGet", "tcpSocket", "exec", "grpc", "initialDelaySeconds", "periodSeconds", "timeoutSeconds",
         "failureThreshold", "successThreshold", "terminationGracePeriodSeconds"}
POD = {"containers", "initContainers", "volumes", "securityContext", "terminationGracePeriodSeconds",
       "restartPolicy", "serviceAccountName", "nodeSelector", "affinity", "tolerations",
       "topologySpreadConstraints"}
SCALE_OUT = os.path.join("deploy", "kubernetes", "scale-out")


def load(source, subdir=os.path.join("deploy", "kubernetes")):
    d = os.path.join(source, subdir)
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


def check_objects(objects, rule):
    """The rules every manifest set follows: API versions, known fields,
    selectors, resource requests, declared volumes."""
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
        if kind in ("Deployment", "StatefulSet"):
            rule(o["spec"]["selector"]["matchLabels"].items() <= template["metadata"]["labels"].items(),
                 f"{name}: selector does not match the template's labels")
        volumes = {v["name"] for v in pod.get("volumes", [])}
        volumes |= {v["metadata"]["name"] for v in o["spec"].get("volumeClaimTemplates", [])}
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


def check(objects):
    problems = []

    def rule(ok, message):
        if not ok:
            problems.append(message)

    check_objects(objects, rule)
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
    # Readiness on /ready (503 while the group forms or rebalances: a rolling
    # update waits for the new workers to join); liveness on /health.
    for p, path in (("readinessProbe", "/ready"), ("livenessProbe", "/health")):
        get = worker.get(p, {}).get("httpGet", {})
        rule(get.get("path") == path, f"workers: {p} must GET {path}, got {get}")
        rule(get.get("port") in ("http", wports.get("http")), f"workers: {p} must use the http port")
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


# ---- scale-out (deploy/kubernetes/scale-out, docs/deploy.md "Scale-out deployment") ----

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "deploy_common"))
import kafka_topics  # noqa: E402
from sidecar_args import sidecar_effective, sidecar_refusal, split_endpoint  # noqa: E402


def expand(text, env):
    """Kubernetes' $(VAR) expansion in command, args and env values: $$ is a
    literal $, $(NAME) is NAME's value if the container defines it, else
    left as written."""
    out, i = [], 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$")
            i += 2
        elif text.startswith("$(", i) and ")" in text[i:]:
            end = text.index(")", i)
            name = text[i + 2:end]
            out.append(env[name] if name in env else text[i:end + 1])
            i = end + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def member_pods(sts):
    """What each of the StatefulSet's Pods gets: its name and a made-up Pod IP
    (distinct per Pod, as a cluster gives them)."""
    return [{"metadata.name": f"{sts['metadata']['name']}-{i}", "status.podIP": f"10.244.{i}.{17 + i}"}
            for i in range(int(sts["spec"].get("replicas", 1)))]


def container_env(container, fields):
    """The container's environment in one Pod: values, and downward-API fields
    from `fields`; the downward-API field behind each variable too."""
    env, source = {}, {}
    for e in container.get("env", []):
        ref = (e.get("valueFrom") or {}).get("fieldRef", {}).get("fieldPath")
        if ref is not None:
            source[e["name"]] = ref
            if ref in fields:
                env[e["name"]] = fields[ref]
        elif "value" in e:
            env[e["name"]] = expand(str(e["value"]), env)
    return env, source


def topics_job_script(job):
    c = job["spec"]["template"]["spec"]["containers"][0]
    env, _ = container_env(c, {})
    script = (c.get("command") or [])[-1:] + (c.get("args") or [])
    return expand(script[-1], env) if script else "", env


def check_scale_out(objects):
    problems = []

    def rule(ok, message):
        if not ok:
            problems.append(message)

    check_objects(objects, rule)
    cm = find(objects, "ConfigMap", "orders-sidetable")
    sc = yaml.safe_load(cm["data"]["sidetable.yaml"])
    wc = yaml.safe_load(cm["data"]["worker.yaml"])
    sts = find(objects, "StatefulSet", "orders")
    labels = sts["spec"]["template"]["metadata"]["labels"]
    pod = sts["spec"]["template"]["spec"]
    side = {c["name"]: c for c in pod.get("initContainers", [])}.get("sidetable")
    rule(side is not None and side.get("restartPolicy") == "Always",
         "scale-out: sidetable must be an init container with restartPolicy: Always (a native sidecar)")
    side = side or {}
    ports = {p["name"]: p["containerPort"] for p in side.get("ports", [])}
    replicas = int(sts["spec"].get("replicas", 1))
    rule(replicas >= 2, f"scale-out: replicas {replicas}: a scale-out service needs at least 2 members")

    # The cluster section: on, replicated acknowledgement, shards = the change topic's partitions.
    cl = sc.get("cluster") or {}
    service = cl.get("service", "")
    rule(bool(service), "scale-out: cluster.service must be set (scale-out is off without it)")
    rule(cl.get("acks", "replicated") == "replicated",
         f"scale-out: cluster.acks {cl.get('acks')}: replicated (an acknowledged write survives its owner)")
    ks = sc["kafka"]
    change_topic = ks["topic"].replace("{service}", service)
    cluster_topic = cl.get("topic", "sidetable.{service}.cluster").replace("{service}", service)
    # cluster.state_topic ("" = off): the shards' projections (docs/scale-out.md, "Bounded restore").
    state_topic = cl.get("state_topic", "sidetable.{service}.state").replace("{service}", service)
    rule((sc.get("security") or {}).get("insecure") is True,
         "scale-out: security.insecure must be true to listen beyond loopback without CURVE (the example sets none)")

    # Per Pod: the flags Kubernetes expands, the member id and the advertised endpoint.
    members, adverts = [], []
    peer_ports = set()
    for fields in member_pods(sts):
        env, source = container_env(side, fields)
        args = [expand(str(a), env) for a in side.get("args", [])]
        eff = sidecar_effective(sc, args)
        members.append(eff["member"])
        adverts.append(eff["advertise"])
        host, port = split_endpoint(eff["advertise"]) if eff["advertise"].startswith("tcp://") else ("", None)
        ip_vars = [n for n, f in source.items() if f == "status.podIP"]
        rule(host == fields["status.podIP"],
             f"scale-out: {fields['metadata.name']} advertises {eff['advertise'] or '(nothing)'}, not its own Pod IP "
             f"{fields['status.podIP']} (downward API status.podIP, variables {ip_vars}): the other sidecars "
             "could not forward to it")
        bound = [split_endpoint(e)[1] for e in eff["listen"] if e.startswith("tcp://")]
        rule(port in bound, f"scale-out: the advertised port {port} is not one the sidecar listens on {bound}")
        peer_ports.add(port)
    rule(len(set(members)) == len(members),
         f"scale-out: member ids {members} are not distinct (cluster.member_id, else --id / sidecar.id)")
    rule(len(set(adverts)) == len(adverts), f"scale-out: advertised endpoints {adverts} are not distinct")
    peer = next(iter(peer_ports)) if len(peer_ports) == 1 else None
    rule(ports.get("peer") == peer and peer is not None,
         f"scale-out: containerPort peer {ports.get('peer')} is not the advertised port {sorted(peer_ports, key=str)}")

    # The network: the peer port open to the service's own Pods and nobody else.
    np = find(objects, "NetworkPolicy", "orders-sidetable")
    rule(np["spec"]["podSelector"].get("matchLabels", {}).items() <= labels.items(),
         "scale-out: the NetworkPolicy does not select the service's Pods")
    rule("Ingress" in np["spec"].get("policyTypes", []), "scale-out: the NetworkPolicy must restrict Ingress")
    opened = {}  # port -> list of "from" lists
    for r in np["spec"].get("ingress", []):
        rule("ports" in r, "scale-out: a NetworkPolicy ingress rule without ports opens every port")
        for p in r.get("ports", []):
            opened.setdefault(p.get("port"), []).append(r.get("from"))

    def only_members(froms):
        return bool(froms) and all(
            set(f) == {"podSelector"} and f["podSelector"].get("matchLabels", {}).items() <= labels.items()
            and f["podSelector"].get("matchLabels") for f in froms)
    rule(peer in opened, f"scale-out: the NetworkPolicy does not open the advertised port {peer}")
    rule(all(only_members(f) for f in opened.get(peer, [])) and peer in opened,
         f"scale-out: the NetworkPolicy opens port {peer} to more than the service's own Pods")
    rule(all(not only_members(f) or p == peer for p, fs in opened.items() for f in fs),
         "scale-out: the NetworkPolicy opens the service's Pods to each other on more than the peer port")
    for p, fs in opened.items():
        for f in fs:
            if f and all(set(x) == {"podSelector"} for x in f) and \
                    any(x["podSelector"].get("matchLabels", {}).get("app.kubernetes.io/name") == "orders-workers"
                        for x in f):
                rule(p in (ports.get("zmq"),), f"scale-out: the workers are let in on {p}, not the zmq port")
    # The StatefulSet's headless Service names the peer port.
    governing_name = sts["spec"].get("serviceName")
    governing = [o for o in objects if o["kind"] == "Service" and o["metadata"]["name"] == governing_name]
    rule(bool(governing), f"scale-out: the StatefulSet's serviceName {governing_name} is no Service here")
    peers = governing[0] if governing else {"metadata": {"name": "?"}, "spec": {"ports": []}}
    rule(peers["spec"].get("clusterIP") == "None", f"scale-out: Service {peers['metadata']['name']} must be headless")
    rule(peers["spec"].get("selector", {}).items() <= labels.items() and peers["spec"].get("selector"),
         "scale-out: the headless Service does not select the service's Pods")
    rule(any(p.get("port") == peer and p.get("targetPort") in ("peer", peer) for p in peers["spec"]["ports"]),
         f"scale-out: the headless Service's ports {peers['spec']['ports']} are not the peer port {peer}")

    # Each member its own data volume, at storage.path; the usual probes and grace.
    claims = {t["metadata"]["name"] for t in sts["spec"].get("volumeClaimTemplates", [])}
    mounts = {m["name"]: m["mountPath"] for m in side.get("volumeMounts", [])}
    data = [n for n, path in mounts.items() if path == sc["storage"]["path"]]
    rule(bool(data) and data[0] in claims,
         f"scale-out: storage.path {sc['storage']['path']} must be a volumeClaimTemplates volume (one per member)")
    http_port = port_of(sc["sidecar"]["http"])
    rule(sc["sidecar"]["http"].startswith("0.0.0.0:"), "scale-out: sidecar.http must bind 0.0.0.0 for the probes")
    rule(ports.get("http") == http_port, f"scale-out: port http {ports.get('http')} != sidecar.http {http_port}")
    # Ready once every shard has a route (GET /ready, docs/scale-out.md); alive and
    # started as any sidecar (/health).
    for p, path in (("startupProbe", "/health"), ("readinessProbe", "/ready"), ("livenessProbe", "/health")):
        get = side.get(p, {}).get("httpGet", {})
        rule(get.get("path") == path and get.get("port") in ("http", http_port),
             f"scale-out: {p} must GET {path} on the http port, got {get}")
    grace = pod.get("terminationGracePeriodSeconds", 30)
    need = int(sc["sidecar"].get("shutdown_grace_ms", 10000)) / 1000 + 2
    rule(grace >= need, f"scale-out: terminationGracePeriodSeconds {grace} < shutdown_grace_ms + 2 s ({need:.0f})")
    app_env = {e["name"]: e.get("value") for c in pod["containers"] for e in c.get("env", [])}
    rule(app_env.get("SIDETABLE_ENDPOINT") == f"tcp://127.0.0.1:{ports.get('zmq')}",
         f"scale-out: app SIDETABLE_ENDPOINT {app_env.get('SIDETABLE_ENDPOINT')} must be its own sidecar")
    for p in pod.get("volumes", []):
        rule("persistentVolumeClaim" not in p, "scale-out: a shared PersistentVolumeClaim; use volumeClaimTemplates")
    pdb = [o for o in objects if o["kind"] == "PodDisruptionBudget"]
    rule(bool(pdb) and pdb[0]["spec"].get("maxUnavailable") == 1 and
         pdb[0]["spec"]["selector"]["matchLabels"].items() <= labels.items(),
         "scale-out: a PodDisruptionBudget with maxUnavailable: 1 over the members")

    # Topics: the Job's script, run against stand-ins for Kafka's tools.
    job = find(objects, "Job", "orders-sidetable-topics")
    script, env = topics_job_script(job)
    topics, error = kafka_topics.run(script, env)
    rule(error is None, f"scale-out: the topics Job's script fails: {error}")
    rf = int(ks.get("replication_factor", 3))
    rule(rf >= 3, f"scale-out: kafka.replication_factor {rf}: 3 for a real cluster")
    want = {
        change_topic: ("the change topic", int(ks["partitions"]),
                       {"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"}),
        cluster_topic: ("the cluster topic", 1, {"cleanup.policy": "compact"}),
        wc["dead_letter"]["topic"]: ("the dead-letter topic", None, {}),
    }
    if state_topic:
        # As StateTopicConfigs() (sidecar/cluster/state_records.cc) creates it.
        want[state_topic] = ("the state topic", int(ks["partitions"]), {"cleanup.policy": "compact", "max.message.bytes": "8388608"})
    for name, (what, partitions, settings) in want.items():
        t = topics.get(name)
        rule(t is not None and "partitions" in t, f"scale-out: topics Job: {what} {name} is not created")
        t = t or {"create": {}, "alter": {}}
        if partitions is not None:
            rule(t.get("partitions") == partitions,
                 f"scale-out: topics Job: {what} {name} gets {t.get('partitions')} partitions, the sidecars "
                 f"expect {partitions}" + (" (kafka.partitions: the shards)" if name == change_topic else ""))
        rule(t.get("replication") == rf, f"scale-out: topics Job: {what} replication {t.get('replication')} "
             f"!= kafka.replication_factor {rf}")
        rule(t.get("bootstrap") == ks["bootstrap"], f"scale-out: topics Job: {what}: bootstrap != kafka.bootstrap")
        for step in ("create", "alter"):
            got = t[step]
            for k, v in settings.items():
                rule(got.get(k) == v, f"scale-out: topics Job: {what} {name}: {step} sets {k}={got.get(k)}, needs {v}")
            isr = int(got.get("min.insync.replicas", 1))
            rule(2 <= isr < rf, f"scale-out: topics Job: {what} {name}: {step} sets min.insync.replicas={isr}, "
                 f"needs 2 (at least 2, below the replication {rf})")
    # A topic that exists with another partition count stops the Job (the sidecars would refuse it).
    _, error = kafka_topics.run(script, env, existing={change_topic: int(ks["partitions"]) + 1})
    rule(error is not None, "scale-out: topics Job: a change topic with another partition count does not fail it")

    # Workers: the service's topic, any member through the Service.
    rule(wc["kafka"]["topic"] == change_topic,
         f"scale-out: workers: kafka.topic {wc['kafka']['topic']} != the service's {change_topic}")
    rule(wc["kafka"]["bootstrap"] == ks["bootstrap"], "scale-out: workers: kafka.bootstrap differs from the sidecars'")
    svc = find(objects, "Service", "orders-sidetable")
    host, port = split_endpoint(wc["sidecar"]["endpoint"])
    svc_ports = {p["port"]: p["targetPort"] for p in svc["spec"]["ports"]}
    rule(host == svc["metadata"]["name"] and port in svc_ports and svc_ports[port] in ("zmq", ports.get("zmq")),
         f"scale-out: workers: sidecar.endpoint {wc['sidecar']['endpoint']} is not the Service's zmq port")
    rule(svc["spec"]["selector"].items() <= labels.items(), "scale-out: Service selector does not match the members")
    rule(find(objects, "Deployment", "orders-workers")["spec"].get("replicas", 1) >= 2,
         "scale-out: workers: at least two replicas in the group")
    wk = find(objects, "Deployment", "orders-workers")["spec"]["template"]["spec"]["containers"][0]
    wk_http = {p["name"]: p["containerPort"] for p in wk.get("ports", [])}.get("http")
    for p, path in (("readinessProbe", "/ready"), ("livenessProbe", "/health")):
        get = wk.get(p, {}).get("httpGet", {})
        rule(get.get("path") == path and get.get("port") in ("http", wk_http),
             f"scale-out: workers: {p} must GET {path} on the http port, got {get}")
    return problems


def load_scale_out_with_binary(objects, sidetable):
    """Each member's configuration as its sidecar sees it (the ConfigMap plus
    its expanded args) through the real loader and validation, the cluster
    section's included: a bad --rest on top is the last thing validated
    before the listener policy, so exit 2 naming rest.address means
    everything before it, ValidateCluster included, passed."""
    cm = find(objects, "ConfigMap", "orders-sidetable")
    sts = find(objects, "StatefulSet", "orders")
    side = {c["name"]: c for c in sts["spec"]["template"]["spec"].get("initContainers", [])}.get("sidetable", {})
    problems = []
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "sidetable.yaml")
        with open(path, "w") as f:
            f.write(cm["data"]["sidetable.yaml"])
        for fields in member_pods(sts):
            env, _ = container_env(side, fields)
            args = [expand(str(a), env) for a in side.get("args", [])]
            refusal = sidecar_refusal(sidetable, args, path)
            if refusal:
                problems.append(f"scale-out: {fields['metadata.name']}: the sidecar refuses its configuration "
                                f"{refusal}")
    return problems


def self_test_scale_out(source, sidetable=None):
    base = load(source, SCALE_OUT)
    assert check_scale_out(base) == [], check_scale_out(base)
    if sidetable:
        assert load_scale_out_with_binary(base, sidetable) == [], load_scale_out_with_binary(base, sidetable)

    def broken(mutate, expect, with_binary=False):
        objs = copy.deepcopy(base)
        mutate(objs)
        problems = load_scale_out_with_binary(objs, sidetable) if with_binary else check_scale_out(objs)
        assert any(expect in p for p in problems), f"{expect!r} not caught: {problems}"

    sts = lambda o: find(o, "StatefulSet", "orders")
    side = lambda o: sts(o)["spec"]["template"]["spec"]["initContainers"][0]
    job_env = lambda o: find(o, "Job", "orders-sidetable-topics")["spec"]["template"]["spec"]["containers"][0]["env"]
    peer_rule = lambda o: find(o, "NetworkPolicy", "orders-sidetable")["spec"]["ingress"][0]

    def args(o, old, new):
        a = side(o)["args"]
        a[a.index(old)] = new

    def drop_args(o, *names):
        a = side(o)["args"]
        for n in names:
            i = a.index(n)
            del a[i:i + 2]

    def setenv(o, name, value):
        for e in job_env(o):
            if e["name"] == name:
                e["value"] = value

    def cfg(o, key, mutate):
        cm = find(o, "ConfigMap", "orders-sidetable")
        doc = yaml.safe_load(cm["data"][key])
        mutate(doc)
        cm["data"][key] = yaml.safe_dump(doc)

    broken(lambda o: sts(o)["spec"].update(replicas=1), "at least 2 members")
    broken(lambda o: cfg(o, "sidetable.yaml", lambda d: d["cluster"].update(service="")), "cluster.service")
    broken(lambda o: cfg(o, "sidetable.yaml", lambda d: d["cluster"].update(acks="local")), "cluster.acks")
    # Member ids: the --id flag dropped, or one member_id for all.
    broken(lambda o: drop_args(o, "--id"), "not distinct")
    broken(lambda o: cfg(o, "sidetable.yaml", lambda d: d["cluster"].update(member_id="orders")), "not distinct")
    # The advertised endpoint: not the Pod IP, not listened on, not the peer port, not let in.
    broken(lambda o: side(o)["env"][1]["valueFrom"]["fieldRef"].update(fieldPath="status.hostIP"), "own Pod IP")
    broken(lambda o: args(o, "tcp://$(POD_IP):7400", "tcp://0.0.0.0:7400"), "own Pod IP")
    broken(lambda o: side(o)["args"].extend(["--listen", side(o)["args"].pop(5)]) or
           side(o)["args"].__delitem__(4), "own Pod IP")
    broken(lambda o: cfg(o, "sidetable.yaml", lambda d: d["cluster"].update(advertise="tcp://10.244.0.17:7401")),
           "not one the sidecar listens on")
    broken(lambda o: side(o)["ports"][0].update(containerPort=7401), "containerPort peer")
    broken(lambda o: peer_rule(o)["ports"][0].update(port=7401), "does not open the advertised port")
    broken(lambda o: peer_rule(o).pop("from"), "to more than the service's own Pods")
    broken(lambda o: peer_rule(o)["from"][0]["podSelector"].update(matchLabels={"app": "x"}),
           "to more than the service's own Pods")
    broken(lambda o: peer_rule(o)["ports"].append({"protocol": "TCP", "port": 5555}), "more than the peer port")
    broken(lambda o: find(o, "NetworkPolicy", "orders-sidetable")["spec"]["ingress"].append({}), "without ports")
    broken(lambda o: find(o, "Service", "orders-sidetable-peers")["spec"].pop("clusterIP"), "headless")
    broken(lambda o: sts(o)["spec"].pop("serviceName"), "is no Service here")
    broken(lambda o: find(o, "Service", "orders-sidetable-peers")["spec"]["ports"][0].update(port=7500),
           "not the peer port")
    broken(lambda o: sts(o)["spec"].pop("volumeClaimTemplates"), "volumeClaimTemplates")
    broken(lambda o: side(o)["startupProbe"]["httpGet"].update(path="/"), "startupProbe")
    broken(lambda o: cfg(o, "sidetable.yaml", lambda d: d.pop("security")), "security.insecure")
    # Topics: partitions, compaction, retention, replication, the --alter.
    broken(lambda o: cfg(o, "sidetable.yaml", lambda d: d["kafka"].update(partitions=24)), "the shards")
    broken(lambda o: setenv(o, "CHANGE_PARTITIONS", "6"), "the shards")
    broken(lambda o: setenv(o, "CLUSTER_PARTITIONS", "3"), "expect 1")
    broken(lambda o: cfg(o, "sidetable.yaml", lambda d: d["cluster"].update(topic="{service}.members")),
           "the cluster topic orders.members is not created")
    broken(lambda o: setenv(o, "CHANGE_TOPIC_CONFIG", "cleanup.policy=compact,retention.ms=-1,retention.bytes=-1,"
                               "min.insync.replicas=2"), "cleanup.policy=compact, needs delete")
    broken(lambda o: setenv(o, "CHANGE_TOPIC_CONFIG", "cleanup.policy=delete,retention.ms=604800000,"
                               "retention.bytes=-1,min.insync.replicas=2"), "retention.ms=604800000")
    broken(lambda o: setenv(o, "CHANGE_TOPIC_CONFIG", "cleanup.policy=delete,retention.ms=-1,min.insync.replicas=2"),
           "retention.bytes=None")
    broken(lambda o: setenv(o, "CLUSTER_TOPIC_CONFIG", "min.insync.replicas=2"), "cleanup.policy=None, needs compact")
    broken(lambda o: setenv(o, "STATE_TOPIC_CONFIG", "cleanup.policy=delete,max.message.bytes=8388608,"
                               "min.insync.replicas=2"), "the state topic sidetable.orders.state: create sets cleanup")
    broken(lambda o: setenv(o, "STATE_TOPIC_CONFIG", "cleanup.policy=compact,min.insync.replicas=2"),
           "max.message.bytes=None")
    broken(lambda o: cfg(o, "sidetable.yaml", lambda d: d["cluster"].update(state_topic="{service}.projection")),
           "the state topic orders.projection is not created")
    broken(lambda o: setenv(o, "CHANGE_TOPIC_CONFIG", "cleanup.policy=delete,retention.ms=-1,retention.bytes=-1"),
           "min.insync.replicas=1")
    broken(lambda o: setenv(o, "REPLICATION_FACTOR", "1"), "replication 1")
    broken(lambda o: cfg(o, "sidetable.yaml", lambda d: d["kafka"].update(replication_factor=1)), "3 for a real")
    broken(lambda o: find(o, "Job", "orders-sidetable-topics")["spec"]["template"]["spec"]["containers"][0]
           ["args"].__setitem__(0, job_script(o).replace("$configs --alter", "true")), "alter sets")
    broken(lambda o: find(o, "Job", "orders-sidetable-topics")["spec"]["template"]["spec"]["containers"][0]
           ["args"].__setitem__(0, job_script(o).replace("exit 1", "true")), "another partition count")
    broken(lambda o: setenv(o, "DEAD_LETTER_TOPIC", "x.dlq"), "dead-letter topic")
    broken(lambda o: cfg(o, "worker.yaml", lambda d: d["kafka"].update(topic="sidetable.orders-0.changes")),
           "workers: kafka.topic")
    broken(lambda o: find(o, "StatefulSet", "orders").update(apiVersion="apps/v1beta1"), "apiVersion")
    broken(lambda o: find(o, "PodDisruptionBudget", "orders")["spec"].update(maxUnavailable=2), "PodDisruptionBudget")
    if sidetable:
        # The real loader catches what the structural rules do not read.
        broken(lambda o: cfg(o, "sidetable.yaml", lambda d: d["cluster"].update(acks="replicate")), "cluster.acks",
               with_binary=True)
        broken(lambda o: cfg(o, "sidetable.yaml", lambda d: d["kafka"].update(topic="sidetable.{sidecar}.changes")),
               "kafka.topic must not contain {sidecar}", with_binary=True)
        broken(lambda o: cfg(o, "sidetable.yaml", lambda d: d["cluster"].update(standby=1)), "cluster.standby",
               with_binary=True)
    broken(lambda o: find(o, "Deployment", "orders-workers")["spec"]["template"]["spec"]["containers"][0]
           ["readinessProbe"]["httpGet"].update(path="/health"), "scale-out: workers: readinessProbe must GET /ready")
    print("self-test (scale-out): every rule caught its break" + (", the real loader too" if sidetable else ""))


def job_script(objects):
    return find(objects, "Job", "orders-sidetable-topics")["spec"]["template"]["spec"]["containers"][0]["args"][0]


def smoke_scale_out(objects, sidetable, kafka_mock):
    """The scale-out example's sidecars, started as the StatefulSet starts
    them, form one cluster (deploy_common/smoke_cluster.py): each member's
    Pod IP is a loopback address of its own."""
    import random
    import smoke_cluster
    cm = find(objects, "ConfigMap", "orders-sidetable")
    sts = find(objects, "StatefulSet", "orders")
    side = {c["name"]: c for c in sts["spec"]["template"]["spec"].get("initContainers", [])}.get("sidetable", {})
    ports = {p["name"]: p["containerPort"] for p in side.get("ports", [])}
    net = f"127.{random.randint(16, 250)}.{random.randint(0, 255)}"
    members = []
    for i, fields in enumerate(member_pods(sts)):
        ip = fields["status.podIP"] = f"{net}.{i + 1}"
        env, _ = container_env(side, fields)
        args = [expand(str(a), env).replace("tcp://0.0.0.0:", f"tcp://{ip}:") for a in side.get("args", [])]
        members.append({"name": fields["metadata.name"], "args": args, "ip": ip,
                        "advertise": f"tcp://{ip}:{ports.get('peer')}", "endpoint": f"tcp://{ip}:{ports.get('zmq')}"})
    return smoke_cluster.run(yaml.safe_load(cm["data"]["sidetable.yaml"]), members, kafka_mock, sidetable)


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
    broken(lambda o: find(o, "Deployment", "orders-workers")["spec"]["template"]["spec"]["containers"][0]
           ["readinessProbe"]["httpGet"].update(path="/health"), "workers: readinessProbe must GET /ready")
    broken(lambda o: find(o, "Deployment", "orders").update(apiVersion="extensions/v1beta1"), "apiVersion")
    print("self-test: every rule caught its break")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    ap.add_argument("--sidetable")
    ap.add_argument("--worker")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--smoke", metavar="KAFKA_MOCK",
                    help="start the scale-out example's sidecars around this Kafka stand-in (sidetable-kafka-mock)")
    args = ap.parse_args()
    if args.self_test:
        self_test(args.source)
        self_test_scale_out(args.source, args.sidetable)
        return 0
    if args.smoke:
        problems = smoke_scale_out(load(args.source, SCALE_OUT), args.sidetable, args.smoke)
        for p in problems:
            print("kubernetes: " + p)
        print(f"kubernetes: scale-out smoke run, {len(problems)} problem(s)")
        return 1 if problems else 0
    objects = load(args.source)
    problems = check(objects)
    if args.sidetable and args.worker:
        problems += load_with_binaries(objects, args.sidetable, args.worker)
    scale_out = load(args.source, SCALE_OUT)
    problems += check_scale_out(scale_out)
    if args.sidetable:
        problems += load_scale_out_with_binary(scale_out, args.sidetable)
    for p in problems:
        print("kubernetes: " + p)
    print(f"kubernetes: {len(objects)} + {len(scale_out)} (scale-out) objects, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
