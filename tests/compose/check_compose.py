#!/usr/bin/python3
"""Checks that compose/ can work on a real Docker host, by reading the files.

No container engine runs on the development machines or in CI, so the
compose file, the configs it mounts, the Dockerfile and .dockerignore are
checked against each other (issue 16): topics and their replication,
ports, paths, health checks, the app sharing the sidecar's network, the
workers' production settings, a non-root multi-stage Debian 12 image.

docker-compose.scale-out.yml (three sidecars of one cluster, docs/scale-out.md):
at least two members sharing one configuration with cluster.service on and
acks: replicated; distinct member ids; each advertising its own address (the
first --listen on eth0, or its service name) on the one peer port it listens
on, not published on the host; a data volume each; kafka-init's script, run
against stand-ins for kafka-topics.sh and kafka-configs.sh, creates and
re-applies the change topic (kafka.partitions partitions, not compacted,
retention.ms and retention.bytes -1) and the cluster topic (1 partition,
compacted) within the one broker's replication, and fails on a change topic
with another partition count; with --sidetable BIN each sidecar's
configuration and flags pass the real loader's validation.

With --smoke KAFKA_MOCK the scale-out file's sidecars are started with their
own commands, each on a loopback address of its own standing in for its
container's address, around a Kafka stand-in, and must form one cluster that
answers for every row through every member (tests/deploy_common/smoke_cluster.py).

  check_compose.py --source DIR [--sidetable BIN]       check the tree
  check_compose.py --self-test [--sidetable BIN]        prove each rule fails on a broken copy
  check_compose.py --source DIR --sidetable BIN --smoke KAFKA_MOCK
"""
import argparse
import copy
import os
import re
import sys
import tempfile

import yaml


def load(source, name="docker-compose.yml"):
    """The compose file and the config files it mounts, keyed by service."""
    compose_dir = os.path.join(source, "compose")
    with open(os.path.join(compose_dir, name)) as f:
        compose = yaml.safe_load(f)
    mounted = {}  # (service, container path) -> parsed YAML
    for name, svc in compose["services"].items():
        for v in svc.get("volumes", []):
            host, _, rest = v.partition(":")
            if not host.startswith("."):
                continue  # a named volume
            target = rest.split(":")[0]
            with open(os.path.normpath(os.path.join(compose_dir, host))) as f:
                mounted[(name, target)] = yaml.safe_load(f)
    with open(os.path.join(compose_dir, "Dockerfile")) as f:
        dockerfile = f.read()
    ignore_path = os.path.join(source, ".dockerignore")
    dockerignore = open(ignore_path).read() if os.path.exists(ignore_path) else ""
    return {"compose": compose, "mounted": mounted, "dockerfile": dockerfile, "dockerignore": dockerignore}


def flag(command, name):
    """The value of --name VALUE or --name=VALUE in a command list."""
    command = command or []
    for i, a in enumerate(command):
        if a == name and i + 1 < len(command):
            return command[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def config_of(t, service):
    svc = t["compose"]["services"][service]
    path = flag(svc.get("command"), "--config")
    if path is None:
        raise AssertionError(f"{service}: no --config in its command")
    if (service, path) not in t["mounted"]:
        raise AssertionError(f"{service}: --config {path} is not a file mounted from compose/")
    return t["mounted"][(service, path)]


def volume_target(svc, volume):
    for v in svc.get("volumes", []):
        parts = v.split(":")
        if parts[0] == volume:
            return parts[1]
    return None


def port_of(address):
    return int(address.rsplit(":", 1)[1])


def health_port(svc):
    test = " ".join(svc.get("healthcheck", {}).get("test", []))
    m = re.search(r"http://127\.0\.0\.1:(\d+)/health", test)
    return int(m.group(1)) if m else None


def workers(t):
    return [n for n, s in t["compose"]["services"].items() if s.get("entrypoint") == ["sidetable-worker"]]


def check(t):
    """Returns a list of problems (empty = all agree)."""
    problems = []

    def rule(ok, message):
        if not ok:
            problems.append(message)

    services = t["compose"]["services"]
    kafka = services["kafka"]
    env = kafka["environment"]
    brokers = len(str(env["KAFKA_CONTROLLER_QUORUM_VOTERS"]).split(","))
    sidecar = services["sidecar"]
    sc = config_of(t, "sidecar")
    init_env = services["kafka-init"]["environment"]

    # Kafka keeps its data on its volume.
    rule(env.get("KAFKA_LOG_DIRS") == volume_target(kafka, "kafka-data"),
         "kafka: KAFKA_LOG_DIRS must be the kafka-data volume's mount point "
         f"({volume_target(kafka, 'kafka-data')}), got {env.get('KAFKA_LOG_DIRS')}")

    # Topics: the sidecar's replication fits the brokers, and with automatic
    # creation off every topic in use is created by kafka-init or the sidecar.
    ks = sc["kafka"]
    rule(ks["bootstrap"] == "kafka:9092", f"sidecar: kafka.bootstrap must be kafka:9092, got {ks['bootstrap']}")
    rule(int(ks["replication_factor"]) <= brokers,
         f"sidecar: kafka.replication_factor {ks['replication_factor']} > {brokers} broker(s): "
         "the change topic would never be created")
    for key in ("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR", "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR",
                "KAFKA_DEFAULT_REPLICATION_FACTOR", "KAFKA_MIN_INSYNC_REPLICAS"):
        rule(int(env.get(key, 0)) <= brokers and key in env, f"kafka: {key} must be set and at most {brokers}")
    change_topic = ks["topic"].replace("{sidecar}", sc["sidecar"]["id"])
    rule("{table}" not in ks["topic"], "sidecar: one change topic (no {table}) for compose")
    rule(init_env["CHANGE_TOPIC"] == change_topic,
         f"kafka-init: CHANGE_TOPIC {init_env['CHANGE_TOPIC']} is not the sidecar's topic {change_topic}")
    rule(int(init_env["CHANGE_PARTITIONS"]) == int(ks["partitions"]),
         f"kafka-init: CHANGE_PARTITIONS {init_env['CHANGE_PARTITIONS']} != kafka.partitions {ks['partitions']}")
    rule(int(init_env["REPLICATION_FACTOR"]) == int(ks["replication_factor"]),
         "kafka-init: REPLICATION_FACTOR differs from the sidecar's kafka.replication_factor")
    auto_create = str(env.get("KAFKA_AUTO_CREATE_TOPICS_ENABLE", "true")).lower() == "true"
    init_script = " ".join(services["kafka-init"].get("command", []))
    rule("$$DEAD_LETTER_TOPIC" in init_script and "$$CHANGE_TOPIC" in init_script,
         "kafka-init: its command must create $$CHANGE_TOPIC and $$DEAD_LETTER_TOPIC")

    # The sidecar: data on its volume, HTTP and ZeroMQ reachable, health on /health.
    s = sc["sidecar"]
    rule(sc["storage"]["path"] == volume_target(sidecar, "sidecar-data"),
         f"sidecar: storage.path {sc['storage']['path']} is not the sidecar-data volume")
    rule(health_port(sidecar) == port_of(s["http"]), f"sidecar: health check port != sidecar.http {s['http']}")
    zmq_ports = [port_of(e) for e in s["listen"] if e.startswith("tcp://")]
    rule(any(e.startswith("tcp://0.0.0.0:") for e in s["listen"]),
         "sidecar: listen on tcp://0.0.0.0 so workers in other containers reach it")
    rule(s["http"].startswith("0.0.0.0:"), "sidecar: http must bind 0.0.0.0 for its published port")
    # The listener policy (docs/security.md, "Transport"): without it the
    # sidecar refuses to start on 0.0.0.0 (compose has no CURVE keys or tokens).
    rule((sc.get("security") or {}).get("insecure") is True,
         "sidecar: security.insecure must be true to listen on 0.0.0.0 without CURVE and tokens")
    published = [str(p).rsplit(":", 1)[1] for p in sidecar.get("ports", [])]
    rule(str(port_of(s["http"])) in published, "sidecar: /health's port must be published")
    grace_s = int(s["shutdown_grace_ms"]) / 1000
    stop = sidecar.get("stop_grace_period", "10s")
    rule(stop.endswith("s") and int(stop[:-1]) >= grace_s + 2,
         f"sidecar: stop_grace_period {stop} must be at least shutdown_grace_ms + 2 s ({grace_s + 2:.0f}s)")
    rule("sidecar-data" in t["compose"].get("volumes", {}) and "kafka-data" in t["compose"].get("volumes", {}),
         "volumes: kafka-data and sidecar-data must be declared")

    # Workers: the sidecar's topic and a created dead-letter topic, the
    # sidecar's endpoint, their own health port, production settings.
    ws = workers(t)
    rule(len(ws) >= 2, "at least two workers in one group")
    host_ports = []
    groups = set()
    for name in ws:
        svc = services[name]
        wc = config_of(t, name)
        k = wc["kafka"]
        topics = k["topic"] if isinstance(k["topic"], list) else [k["topic"]]
        rule(topics == [change_topic], f"{name}: kafka.topic {topics} is not the sidecar's {change_topic}")
        rule(k.get("bootstrap") == ks["bootstrap"], f"{name}: kafka.bootstrap differs from the sidecar's")
        dlq = wc["dead_letter"]["topic"]
        rule(dlq == init_env["DEAD_LETTER_TOPIC"] or auto_create,
             f"{name}: dead_letter.topic {dlq} is never created (kafka-init creates {init_env['DEAD_LETTER_TOPIC']})")
        endpoint = wc["sidecar"]["endpoint"]
        rule(endpoint.startswith("tcp://sidecar:") and int(endpoint.rsplit(":", 1)[1]) in zmq_ports,
             f"{name}: sidecar.endpoint {endpoint} is not the sidecar service's port {zmq_ports}")
        rule(health_port(svc) == port_of(wc["http"]), f"{name}: health check port != http {wc['http']}")
        rule(wc["http"].startswith("0.0.0.0:"), f"{name}: http must bind 0.0.0.0 for its published port")
        for p in svc.get("ports", []):
            host_ports.append(str(p).rsplit(":", 2)[-2])
        props = (k.get("properties") or {})
        rule(int(props.get("fetch.wait.max.ms", 500)) >= 100,
             f"{name}: fetch.wait.max.ms {props.get('fetch.wait.max.ms')} is the in-process mock's tuning")
        rule(not k.get("bootstrap_file"), f"{name}: bootstrap_file is for the embedded development Kafka")
        groups.add(k["group"])
        deps = svc.get("depends_on", {})
        rule(deps.get("kafka-init", {}).get("condition") == "service_completed_successfully",
             f"{name}: must wait for kafka-init (its dead-letter topic)")
    rule(len(groups) == 1, f"workers must share one consumer group, got {sorted(groups)}")
    rule(len(host_ports) == len(set(host_ports)), f"workers publish the same host port: {host_ports}")

    # The application reaches its sidecar the way a sidecar is reached.
    app = services.get("app", {})
    rule(app.get("network_mode") == "service:sidecar", "app: network_mode must be service:sidecar")
    endpoint = flag(app.get("command"), "--endpoint") or ""
    rule(endpoint.startswith("tcp://127.0.0.1:") and int(endpoint.rsplit(":", 1)[1]) in zmq_ports,
         f"app: --endpoint {endpoint} must be the sidecar's port on 127.0.0.1")
    rule("ports" not in app, "app: a service in another's network namespace cannot publish ports")

    # Every service with a health check that others wait on has one.
    for name, svc in services.items():
        for dep, how in (svc.get("depends_on") or {}).items():
            if isinstance(how, dict) and how.get("condition") == "service_healthy":
                rule("healthcheck" in services[dep], f"{name} waits for {dep} to be healthy; it has no health check")

    # The image: multi-stage Debian 12, non-root, a build context without .git and build/.
    df = t["dockerfile"]
    froms = re.findall(r"^FROM\s+(\S+)", df, re.M)
    rule(len(froms) >= 2 and all(f.startswith("debian:12") or f.startswith("debian:bookworm") for f in froms),
         f"Dockerfile: a multi-stage build on Debian 12, got FROM {froms}")
    last_stage = df[df.rfind("\nFROM"):]
    users = re.findall(r"^USER\s+(\S+)", last_stage, re.M)
    rule(bool(users) and users[-1] not in ("root", "0", "0:0"), "Dockerfile: the final stage must run as non-root")
    ignored = {l.strip().rstrip("/") for l in t["dockerignore"].splitlines() if l.strip() and not l.startswith("#")}
    for needed in (".git", "build"):
        rule(needed in ignored, f".dockerignore must exclude {needed}")
    return problems


def self_test(source):
    """Each rule must catch the break it is about."""
    base = load(source)
    assert check(base) == [], check(base)

    def broken(mutate, expect):
        t = copy.deepcopy(base)
        mutate(t)
        problems = check(t)
        assert any(expect in p for p in problems), f"{expect!r} not caught: {problems}"

    svc = lambda t, n: t["compose"]["services"][n]
    cfg = lambda t, n: config_of(t, n)
    broken(lambda t: svc(t, "kafka")["environment"].pop("KAFKA_LOG_DIRS"), "KAFKA_LOG_DIRS")
    broken(lambda t: cfg(t, "sidecar")["kafka"].update(replication_factor=3), "replication_factor 3")
    broken(lambda t: cfg(t, "sidecar")["kafka"].update(partitions=24), "CHANGE_PARTITIONS")
    broken(lambda t: cfg(t, "sidecar")["sidecar"].update(id="other"), "CHANGE_TOPIC")
    broken(lambda t: cfg(t, "worker-1")["dead_letter"].update(topic="x.dlq"), "never created")
    broken(lambda t: cfg(t, "worker-1")["kafka"]["properties"].update({"fetch.wait.max.ms": "5"}), "mock")
    broken(lambda t: cfg(t, "worker-1")["sidecar"].update(endpoint="tcp://sidecar:6000"), "sidecar.endpoint")
    broken(lambda t: cfg(t, "worker-1").update(http="127.0.0.1:9465"), "bind 0.0.0.0")
    broken(lambda t: cfg(t, "sidecar")["storage"].update(path="/data"), "storage.path")
    broken(lambda t: cfg(t, "sidecar")["sidecar"].update(http="0.0.0.0:9000"), "health check port")
    broken(lambda t: cfg(t, "sidecar").pop("security"), "security.insecure")
    broken(lambda t: cfg(t, "sidecar")["sidecar"].update(shutdown_grace_ms=60000), "stop_grace_period")
    broken(lambda t: svc(t, "app").pop("network_mode"), "network_mode")
    broken(lambda t: svc(t, "app").update(command=["--endpoint", "tcp://sidecar:5555"]), "127.0.0.1")
    broken(lambda t: svc(t, "worker-2").update(ports=["127.0.0.1:9465:9465"]), "same host port")
    broken(lambda t: svc(t, "sidecar").pop("healthcheck"), "no health check")
    broken(lambda t: t.update(dockerfile=t["dockerfile"].replace("USER 10001:10001", "USER root")), "non-root")
    broken(lambda t: t.update(dockerfile=re.sub(r"FROM debian:12 AS build\n", "", t["dockerfile"])), "multi-stage")
    broken(lambda t: t.update(dockerignore=""), ".git")
    print("self-test: every rule caught its break")


# ---- scale-out (compose/docker-compose.scale-out.yml, docs/deploy.md "Scale-out deployment") ----

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "deploy_common"))
import kafka_topics  # noqa: E402
from sidecar_args import sidecar_effective, sidecar_refusal, split_endpoint  # noqa: E402

SCALE_OUT = "docker-compose.scale-out.yml"


def unescape(text, where, rule):
    """Compose's interpolation: $$ is a literal $; any other $ is a variable
    from the host's environment, which these files never mean."""
    rule("$" not in text.replace("$$", ""),
         f"{where}: a single $ is interpolated by compose from the host's environment; write $$")
    return text.replace("$$", "$")


def cluster_sidecars(t):
    """The services running a sidecar with a cluster: section."""
    out = []
    for name, svc in t["compose"]["services"].items():
        path = flag(svc.get("command"), "--config")
        if path and (name, path) in t["mounted"] and (t["mounted"][(name, path)] or {}).get("cluster"):
            out.append(name)
    return out


def check_scale_out(t):
    problems = []

    def rule(ok, message):
        if not ok:
            problems.append(message)

    services = t["compose"]["services"]
    env = services["kafka"]["environment"]
    brokers = len(str(env["KAFKA_CONTROLLER_QUORUM_VOTERS"]).split(","))
    rule(str(env.get("KAFKA_AUTO_CREATE_TOPICS_ENABLE", "true")).lower() == "false",
         "scale-out: kafka: KAFKA_AUTO_CREATE_TOPICS_ENABLE must be false (kafka-init creates the topics)")
    rule(env.get("KAFKA_LOG_DIRS") == volume_target(services["kafka"], "kafka-data"),
         "scale-out: kafka: KAFKA_LOG_DIRS must be the kafka-data volume's mount point")
    for key in ("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR", "KAFKA_MIN_INSYNC_REPLICAS"):
        rule(key in env and int(env[key]) <= brokers, f"scale-out: kafka: {key} must be set and at most {brokers}")
    names = cluster_sidecars(t)
    rule(len(names) >= 2, f"scale-out: sidecars with a cluster: section {names}: at least 2 members")
    if not names:
        return problems
    sc = config_of(t, names[0])
    cl = sc.get("cluster") or {}
    service = cl.get("service", "")
    rule(bool(service), "scale-out: cluster.service must be set")
    rule(cl.get("acks", "replicated") == "replicated", f"scale-out: cluster.acks {cl.get('acks')}: replicated")
    ks = sc["kafka"]
    rule(ks["bootstrap"] == "kafka:9092", f"scale-out: kafka.bootstrap must be kafka:9092, got {ks['bootstrap']}")
    rule((sc.get("security") or {}).get("insecure") is True,
         "scale-out: security.insecure must be true to listen beyond loopback without CURVE (the example sets none)")
    change_topic = ks["topic"].replace("{service}", service)
    cluster_topic = cl.get("topic", "sidetable.{service}.cluster").replace("{service}", service)
    # cluster.state_topic ("" = off): the shards' projections (docs/scale-out.md, "Bounded restore").
    state_topic = cl.get("state_topic", "sidetable.{service}.state").replace("{service}", service)

    members, adverts, peer_ports, data_volumes, host_ports = [], [], set(), [], []
    http_port = port_of(sc["sidecar"]["http"])
    for name in names:
        svc = services[name]
        rule(config_of(t, name) == sc, f"scale-out: {name} mounts another configuration than {names[0]}")
        eff = sidecar_effective(sc, [str(a) for a in svc.get("command", [])])
        members.append(eff["member"])
        adverts.append((name, eff["advertise"]))
        host, port = split_endpoint(eff["advertise"]) if eff["advertise"].startswith("tcp://") else ("", None)
        # Its own address on compose's network: an interface name (ZeroMQ binds
        # it as the address and reports that) or its own service name.
        networks = svc.get("networks") or ["default"]
        rule((host == "eth0" and len(networks) == 1 and "network_mode" not in svc) or host == name,
             f"scale-out: {name} advertises {eff['advertise'] or '(nothing)'}: the other sidecars need its own "
             "address (the first --listen on eth0, its one network, or its service name)")
        bound = [split_endpoint(e)[1] for e in eff["listen"] if e.startswith("tcp://")]
        rule(port in bound, f"scale-out: {name}: the advertised port {port} is not one it listens on {bound}")
        peer_ports.add(port)
        published = [str(p).rsplit(":", 1)[1] for p in svc.get("ports", [])]
        rule(str(port) not in published, f"scale-out: {name}: the peer port {port} is published on the host")
        rule(str(http_port) in published, f"scale-out: {name}: /health's port {http_port} is not published")
        host_ports += [str(p).rsplit(":", 2)[-2] for p in svc.get("ports", [])]
        volume = [v.split(":")[0] for v in svc.get("volumes", []) if v.split(":")[1] == sc["storage"]["path"]]
        rule(len(volume) == 1 and not volume[0].startswith(".") and volume[0] in (t["compose"].get("volumes") or {}),
             f"scale-out: {name}: storage.path {sc['storage']['path']} must be a declared named volume")
        data_volumes += volume
        rule(health_port(svc) == http_port, f"scale-out: {name}: health check port != sidecar.http {http_port}")
        stop = svc.get("stop_grace_period", "10s")
        grace_s = int(sc["sidecar"].get("shutdown_grace_ms", 10000)) / 1000
        rule(stop.endswith("s") and int(stop[:-1]) >= grace_s + 2,
             f"scale-out: {name}: stop_grace_period {stop} < shutdown_grace_ms + 2 s")
        rule((svc.get("depends_on") or {}).get("kafka-init", {}).get("condition") == "service_completed_successfully",
             f"scale-out: {name} must wait for kafka-init (the topics' settings)")
    rule(len(set(members)) == len(members),
         f"scale-out: member ids {members} are not distinct (cluster.member_id, else --id / sidecar.id)")
    rule(len(set(a for _, a in adverts if "eth0" not in a)) == len([a for _, a in adverts if "eth0" not in a]),
         f"scale-out: advertised endpoints {adverts} are not distinct")
    rule(len(peer_ports) == 1, f"scale-out: the sidecars advertise different ports {sorted(peer_ports, key=str)}")
    rule(len(set(data_volumes)) == len(data_volumes), f"scale-out: sidecars share a data volume {data_volumes}")
    rule(len(set(host_ports)) == len(host_ports), f"scale-out: services publish the same host port: {host_ports}")

    # kafka-init's script, run against stand-ins for Kafka's tools.
    init = services["kafka-init"]
    script = unescape("\n".join(init.get("command", [])), "scale-out: kafka-init", rule)
    topics, error = kafka_topics.run(script, init.get("environment") or {})
    rule(error is None, f"scale-out: kafka-init's script fails: {error}")
    rf = int(ks["replication_factor"])
    rule(rf <= brokers, f"scale-out: kafka.replication_factor {rf} > {brokers} broker(s)")
    want = {change_topic: ("the change topic", int(ks["partitions"]),
                           {"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"}),
            cluster_topic: ("the cluster topic", 1, {"cleanup.policy": "compact"})}
    if state_topic:
        # As StateTopicConfigs() (sidecar/cluster/state_records.cc) creates it.
        want[state_topic] = ("the state topic", int(ks["partitions"]), {"cleanup.policy": "compact", "max.message.bytes": "8388608"})
    for topic, (what, partitions, settings) in want.items():
        got = topics.get(topic) or {"create": {}, "alter": {}}
        rule("partitions" in got, f"scale-out: kafka-init: {what} {topic} is not created")
        rule(got.get("partitions") == partitions, f"scale-out: kafka-init: {what} {topic} gets "
             f"{got.get('partitions')} partitions, the sidecars expect {partitions}"
             + (" (kafka.partitions: the shards)" if topic == change_topic else ""))
        rule(got.get("replication") == rf, f"scale-out: kafka-init: {what} replication {got.get('replication')} "
             f"!= kafka.replication_factor {rf}")
        for step in ("create", "alter"):
            for k, v in settings.items():
                rule(got[step].get(k) == v,
                     f"scale-out: kafka-init: {what} {topic}: {step} sets {k}={got[step].get(k)}, needs {v}")
            isr = int(got[step].get("min.insync.replicas", 1))
            rule(isr <= brokers, f"scale-out: kafka-init: {what}: min.insync.replicas={isr} > {brokers} broker(s)")
    _, error = kafka_topics.run(script, init.get("environment") or {},
                                existing={change_topic: int(ks["partitions"]) + 1})
    rule(error is not None, "scale-out: kafka-init: a change topic with another partition count does not fail it")
    return problems


def load_scale_out_with_binary(t, sidetable):
    """Each sidecar's configuration as it sees it (the file plus its command)
    through the real loader and validation, the cluster section's included:
    a bad --rest on top is validated after it, so exit 2 naming rest.address
    means everything before it passed."""
    problems = []
    with tempfile.TemporaryDirectory() as d:
        for name in cluster_sidecars(t):
            path = os.path.join(d, name + ".yaml")
            with open(path, "w") as f:
                yaml.safe_dump(config_of(t, name), f)
            args = [str(a) for a in t["compose"]["services"][name]["command"]]
            refusal = sidecar_refusal(sidetable, args, path)
            if refusal:
                problems.append(f"scale-out: {name}: the sidecar refuses its configuration {refusal}")
    return problems


def self_test_scale_out(source, sidetable=None):
    base = load(source, SCALE_OUT)
    assert check_scale_out(base) == [], check_scale_out(base)
    if sidetable:
        assert load_scale_out_with_binary(base, sidetable) == [], load_scale_out_with_binary(base, sidetable)

    def broken(mutate, expect, with_binary=False):
        t = copy.deepcopy(base)
        mutate(t)
        problems = load_scale_out_with_binary(t, sidetable) if with_binary else check_scale_out(t)
        assert any(expect in p for p in problems), f"{expect!r} not caught: {problems}"

    svc = lambda t, n: t["compose"]["services"][n]
    init_env = lambda t: svc(t, "kafka-init")["environment"]

    def cfg(t, mutate):  # the one file every sidecar mounts
        for key, doc in t["mounted"].items():
            if doc and doc.get("cluster"):
                mutate(doc)

    def command(t, name, old, new):
        c = svc(t, name)["command"]
        c[c.index(old)] = new

    broken(lambda t: [svc(t, n).update(command=["--config", "/x.yaml"]) for n in ("sidecar-2", "sidecar-3")],
           "at least 2 members")
    broken(lambda t: cfg(t, lambda d: d["cluster"].update(service="")), "cluster.service")
    broken(lambda t: cfg(t, lambda d: d["cluster"].update(acks="local")), "cluster.acks")
    broken(lambda t: command(t, "sidecar-2", "sidecar-2", "sidecar-1"), "not distinct")
    broken(lambda t: cfg(t, lambda d: d["cluster"].update(member_id="demo")), "not distinct")
    broken(lambda t: command(t, "sidecar-3", "tcp://eth0:7400", "tcp://0.0.0.0:7400"), "its own address")
    broken(lambda t: cfg(t, lambda d: d["cluster"].update(advertise="tcp://sidecar-1:7400")), "its own address")
    broken(lambda t: command(t, "sidecar-2", "tcp://eth0:7400", "tcp://eth0:7401"), "different ports")
    broken(lambda t: svc(t, "sidecar-1")["ports"].append("127.0.0.1:7400:7400"), "published on the host")
    broken(lambda t: svc(t, "sidecar-2").update(volumes=[v.replace("sidecar-2-data", "sidecar-1-data")
                                                          for v in svc(t, "sidecar-2")["volumes"]]), "share a data")
    broken(lambda t: svc(t, "sidecar-3")["ports"].__setitem__(0, "127.0.0.1:5555:5555"), "same host port")
    broken(lambda t: cfg(t, lambda d: d.pop("security")), "security.insecure")
    broken(lambda t: svc(t, "sidecar-2").pop("depends_on"), "wait for kafka-init")
    broken(lambda t: cfg(t, lambda d: d["kafka"].update(partitions=12)), "the shards")
    broken(lambda t: init_env(t).update(CLUSTER_PARTITIONS="6"), "expect 1")
    broken(lambda t: init_env(t).update(CHANGE_TOPIC_CONFIG="cleanup.policy=compact,retention.ms=-1,"
                                        "retention.bytes=-1"), "cleanup.policy=compact, needs delete")
    broken(lambda t: init_env(t).update(CHANGE_TOPIC_CONFIG="cleanup.policy=delete,retention.bytes=-1"),
           "retention.ms=None")
    broken(lambda t: init_env(t).update(CHANGE_TOPIC_CONFIG="cleanup.policy=delete,retention.ms=-1,"
                                        "retention.bytes=1073741824"), "retention.bytes=1073741824")
    broken(lambda t: init_env(t).update(CLUSTER_TOPIC_CONFIG="cleanup.policy=delete"), "needs compact")
    broken(lambda t: init_env(t).update(STATE_TOPIC_CONFIG="cleanup.policy=delete,max.message.bytes=8388608"),
           "the state topic sidetable.demo.state: create sets cleanup.policy=delete, needs compact")
    broken(lambda t: init_env(t).update(STATE_TOPIC_CONFIG="cleanup.policy=compact"), "max.message.bytes=None")
    broken(lambda t: init_env(t).update(STATE_TOPIC="sidetable.demo.states"), "state topic sidetable.demo.state is not")
    broken(lambda t: init_env(t).update(CHANGE_TOPIC="sidetable.demo-sidecar.changes"), "is not created")
    broken(lambda t: init_env(t).update(REPLICATION_FACTOR="3"), "replication 3")
    broken(lambda t: init_env(t).update(CHANGE_TOPIC_CONFIG="cleanup.policy=delete,retention.ms=-1,"
                                        "retention.bytes=-1,min.insync.replicas=2"), "min.insync.replicas=2 >")
    broken(lambda t: svc(t, "kafka-init").update(command=[svc(t, "kafka-init")["command"][0].replace(
        "$$configs --alter", "true")]), "alter sets")
    broken(lambda t: svc(t, "kafka-init").update(command=[svc(t, "kafka-init")["command"][0].replace(
        "exit 1", "true")]), "another partition count")
    broken(lambda t: svc(t, "kafka-init").update(command=[svc(t, "kafka-init")["command"][0].replace(
        '"$$3"', '"$3"')]), "write $$")
    broken(lambda t: svc(t, "kafka")["environment"].update(KAFKA_AUTO_CREATE_TOPICS_ENABLE="true"), "AUTO_CREATE")
    if sidetable:
        broken(lambda t: cfg(t, lambda d: d["cluster"].update(acks="replicate")), "cluster.acks", with_binary=True)
        broken(lambda t: cfg(t, lambda d: d["kafka"].update(topic="sidetable.{sidecar}.changes")),
               "kafka.topic must not contain {sidecar}", with_binary=True)
        broken(lambda t: cfg(t, lambda d: d["cluster"].update(topic="sidetable.{service}.changes")),
               "cluster.topic must differ", with_binary=True)
    print("self-test (scale-out): every rule caught its break" + (", the real loader too" if sidetable else ""))


def smoke_scale_out(t, sidetable, kafka_mock):
    """The scale-out file's sidecars, started with their own commands, form
    one cluster (deploy_common/smoke_cluster.py): each container's address on
    compose's network (eth0) is a loopback address of its own."""
    import random
    import smoke_cluster
    net = f"127.{random.randint(16, 250)}.{random.randint(0, 255)}"
    members = []
    for i, name in enumerate(cluster_sidecars(t)):
        ip = f"{net}.{i + 1}"
        command = [str(a) for a in t["compose"]["services"][name]["command"]]
        listen = [command[k + 1] for k in range(len(command) - 1) if command[k] == "--listen"]
        peer = [split_endpoint(e)[1] for e in listen if e.startswith("tcp://eth0:")]
        app = [split_endpoint(e)[1] for e in listen if e.startswith("tcp://0.0.0.0:")]
        if not peer or not app:
            return [f"smoke: {name}: no --listen tcp://eth0:PORT (peers) and tcp://0.0.0.0:PORT (applications)"]
        args = [a.replace("tcp://eth0:", f"tcp://{ip}:").replace("tcp://0.0.0.0:", f"tcp://{ip}:") for a in command]
        members.append({"name": name, "args": args, "ip": ip, "advertise": f"tcp://{ip}:{peer[0]}",
                        "endpoint": f"tcp://{ip}:{app[0]}"})
    return smoke_cluster.run(config_of(t, cluster_sidecars(t)[0]), members, kafka_mock, sidetable)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    ap.add_argument("--sidetable", help="the sidetable binary: load the scale-out sidecars' configurations")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--smoke", metavar="KAFKA_MOCK",
                    help="start the scale-out file's sidecars around this Kafka stand-in (sidetable-kafka-mock)")
    args = ap.parse_args()
    if args.self_test:
        self_test(args.source)
        self_test_scale_out(args.source, args.sidetable)
        return 0
    if args.smoke:
        problems = smoke_scale_out(load(args.source, SCALE_OUT), args.sidetable, args.smoke)
        for p in problems:
            print("compose: " + p)
        print(f"compose: scale-out smoke run, {len(problems)} problem(s)")
        return 1 if problems else 0
    problems = check(load(args.source))
    scale_out = load(args.source, SCALE_OUT)
    problems += check_scale_out(scale_out)
    if args.sidetable:
        problems += load_scale_out_with_binary(scale_out, args.sidetable)
    for p in problems:
        print("compose: " + p)
    print(f"compose: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
