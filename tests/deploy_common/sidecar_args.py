"""What a sidecar's settings are once its flags are applied over its config
file, as sidecar/main.cc and sidecar/server.cc apply them (the manifests and
compose files pass per-member values as flags: the config loader expands no
variables), and whether the real sidecar accepts them."""

import subprocess


def sidecar_effective(sc, args):
    """sc: the parsed config file; args: the command line after the program.
    Returns the sidecar id, the listen endpoints, the cluster member id
    (--member-id, else cluster.member_id, else the sidecar id) and the
    advertised endpoint (--advertise, else cluster.advertise, else the first
    bound listen endpoint)."""
    def values(flag):
        return [args[i + 1] for i, a in enumerate(args[:-1]) if a == flag] + \
               [a.split("=", 1)[1] for a in args if a.startswith(flag + "=")]
    sidecar_id = (values("--id") or [(sc.get("sidecar") or {}).get("id", "")])[-1]
    listen = values("--listen") or (sc.get("sidecar") or {}).get("listen", [])
    listen = [listen] if isinstance(listen, str) else listen
    cl = sc.get("cluster") or {}
    member = (values("--member-id") or [cl.get("member_id") or sidecar_id])[-1]
    advertise = (values("--advertise") or [cl.get("advertise") or (listen[0] if listen else "")])[-1]
    return {"id": sidecar_id, "listen": listen, "member": member, "advertise": advertise,
            "config": values("--config")}


def sidecar_refusal(sidetable, args, config_path):
    """Runs the real sidetable with `args` (its --config pointed at
    config_path) and a bad --rest appended: exit 2 naming rest.address means
    every setting validated before it, the cluster section included, passed.
    Returns None, or why the sidecar refused."""
    args = [config_path if i > 0 and args[i - 1] == "--config" else a for i, a in enumerate(args)]
    r = subprocess.run([sidetable] + args + ["--rest", "not-an-address"], capture_output=True, text=True,
                       timeout=30)
    if r.returncode == 2 and "rest.address" in r.stderr:
        return None
    return f"({' '.join(args)}): exit {r.returncode}: {r.stderr.strip()}"


def split_endpoint(endpoint):
    """tcp://host:port -> (host, port as int, or None)."""
    host, _, port = endpoint[len("tcp://"):].rpartition(":")
    return host, int(port) if port.isdigit() else None
