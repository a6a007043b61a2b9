"""What a sidecar's settings are once its flags are applied over its config
file, as sidecar/main.cc and sidecar/server.cc apply them (the manifests and
compose files pass per-member values as flags: the config loader expands no
variables and there is no --advertise or --member-id flag)."""


def sidecar_effective(sc, args):
    """sc: the parsed config file; args: the command line after the program.
    Returns the sidecar id, the listen endpoints, the cluster member id
    (cluster.member_id, else the sidecar id) and the advertised endpoint
    (cluster.advertise, else the first bound listen endpoint)."""
    def values(flag):
        return [args[i + 1] for i, a in enumerate(args[:-1]) if a == flag] + \
               [a.split("=", 1)[1] for a in args if a.startswith(flag + "=")]
    sidecar_id = (values("--id") or [(sc.get("sidecar") or {}).get("id", "")])[-1]
    listen = values("--listen") or (sc.get("sidecar") or {}).get("listen", [])
    listen = [listen] if isinstance(listen, str) else listen
    cl = sc.get("cluster") or {}
    return {"id": sidecar_id, "listen": listen, "member": cl.get("member_id") or sidecar_id,
            "advertise": cl.get("advertise") or (listen[0] if listen else ""), "config": values("--config")}


def split_endpoint(endpoint):
    """tcp://host:port -> (host, port as int, or None)."""
    host, _, port = endpoint[len("tcp://"):].rpartition(":")
    return host, int(port) if port.isdigit() else None
