#!/usr/bin/python3
"""The install layout and the Debian package, checked from this build.

1. `cmake --install` into a scratch root (DESTDIR) with prefix /usr/local:
   binaries, example configs, systemd units whose ExecStart names the
   installed binary, /etc under the prefix; `sidetable --version` runs.
2. `cpack -G DEB`, then `dpkg-deb` reads it: control fields (Depends from
   the binaries' libraries, adduser), conffiles, maintainer scripts that
   parse; extracted into a scratch root, the packaged binaries run
   `--version` and the units point at /usr/bin and /etc/sidetable.

It does not install the package on this machine (`dpkg -i` would create a
system user and start a service here): docs/deploy.md says what was run.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

PROGRAMS = ["sidetable", "sidetable-worker", "sidetable-cli", "sidetable-demo", "sidetable-kafka-mock"]


def run(args, **kw):
    r = subprocess.run(args, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r.stdout


def expect(ok, message):
    if not ok:
        raise AssertionError(message)


def unit_exec(path):
    text = open(path).read()
    m = re.search(r"^ExecStart=(\S+) --config (\S+)$", text, re.M)
    expect(m is not None, f"{path}: no ExecStart=... --config ... line:\n{text}")
    expect("@" not in text.replace("@.service", ""), f"{path}: an unreplaced @variable@:\n{text}")
    return m.group(1), m.group(2)


def check_version(root, bindir):
    for p in ["sidetable", "sidetable-worker", "sidetable-cli", "sidetable-kafka-mock"]:
        out = run([os.path.join(root, bindir.lstrip("/"), p), "--version"]).strip()
        expect(re.fullmatch(re.escape(p) + r" \d+\.\d+\.\d+", out) is not None, f"{p} --version said {out!r}")


def check_install(build, scratch):
    root = os.path.join(scratch, "install-root")
    run(["cmake", "--install", build, "--prefix", "/usr/local"], env=dict(os.environ, DESTDIR=root))
    prefix = os.path.join(root, "usr/local")
    for p in PROGRAMS:
        path = os.path.join(prefix, "bin", p)
        expect(os.access(path, os.X_OK), f"cmake --install: {path} missing or not executable")
    for c in ["sidetable.dev.yaml", "sidetable.prod.yaml", "sidetable.cluster.dev.yaml", "worker.dev.yaml",
              "worker.prod.yaml"]:
        expect(os.path.isfile(os.path.join(prefix, "share/sidetable/configs", c)), f"cmake --install: configs/{c}")
    for c in ["sidetable.yaml", "worker.yaml"]:
        expect(os.path.isfile(os.path.join(prefix, "etc/sidetable", c)),
               f"cmake --install: etc/sidetable/{c} under the prefix (not /etc) for a non-/usr prefix")
    expect(not os.path.exists(os.path.join(root, "etc")), "cmake --install --prefix /usr/local wrote to /etc")
    exe, conf = unit_exec(os.path.join(prefix, "lib/systemd/system/sidetable.service"))
    expect(exe == "/usr/local/bin/sidetable" and conf == "/usr/local/etc/sidetable/sidetable.yaml",
           f"sidetable.service: ExecStart {exe} --config {conf}")
    exe, conf = unit_exec(os.path.join(prefix, "lib/systemd/system/sidetable-worker.service"))
    expect(exe == "/usr/local/bin/sidetable-worker", f"sidetable-worker.service: ExecStart {exe}")
    check_version(root, "/usr/local/bin")
    # A second install keeps an operator's edited configuration.
    edited = os.path.join(prefix, "etc/sidetable/sidetable.yaml")
    with open(edited, "a") as f:
        f.write("# edited by the operator\n")
    run(["cmake", "--install", build, "--prefix", "/usr/local"], env=dict(os.environ, DESTDIR=root))
    expect(open(edited).read().endswith("# edited by the operator\n"), "a re-install overwrote the edited config")


def check_deb(build, scratch):
    out_dir = os.path.join(scratch, "cpack")
    run(["cpack", "-G", "DEB", "--config", os.path.join(build, "CPackConfig.cmake"), "-B", out_dir], cwd=scratch)
    debs = [f for f in os.listdir(out_dir) if f.endswith(".deb")]
    expect(len(debs) == 1, f"cpack made {debs}")
    deb = os.path.join(out_dir, debs[0])
    depends = run(["dpkg-deb", "-f", deb, "Depends"])
    # RocksDB is linked statically (librocksdb-dev ships librocksdb.a); its compression libraries show.
    for lib in ["libzmq5", "librdkafka1", "libyaml-cpp", "libzstd1", "adduser"]:
        expect(lib in depends, f"Depends lacks {lib}: {depends}")
    expect(run(["dpkg-deb", "-f", deb, "Package"]).strip() == "sidetable", "package name")
    ctrl = os.path.join(scratch, "control")
    run(["dpkg-deb", "-e", deb, ctrl])
    conffiles = open(os.path.join(ctrl, "conffiles")).read().split()
    expect(conffiles == ["/etc/sidetable/sidetable.yaml", "/etc/sidetable/worker.yaml"], f"conffiles {conffiles}")
    for script in ["postinst", "prerm", "postrm"]:
        path = os.path.join(ctrl, script)
        expect(os.access(path, os.X_OK), f"{script} missing or not executable")
        run(["sh", "-n", path])
    expect("adduser --system" in open(os.path.join(ctrl, "postinst")).read(), "postinst creates no user")
    root = os.path.join(scratch, "deb-root")
    run(["dpkg-deb", "-x", deb, root])
    listing = run(["dpkg-deb", "-c", deb])
    for path in ["./usr/bin/sidetable", "./usr/bin/sidetable-worker", "./usr/bin/sidetable-cli",
                 "./etc/sidetable/sidetable.yaml", "./usr/lib/systemd/system/sidetable.service",
                 "./usr/share/sidetable/configs/sidetable.dev.yaml", "./usr/share/doc/sidetable/deploy.md"]:
        expect(path in listing, f"the package lacks {path}")
    exe, conf = unit_exec(os.path.join(root, "usr/lib/systemd/system/sidetable.service"))
    expect(exe == "/usr/bin/sidetable" and conf == "/etc/sidetable/sidetable.yaml",
           f"packaged sidetable.service: ExecStart {exe} --config {conf}")
    check_version(root, "/usr/bin")
    # The packaged configuration starts a sidecar: it loads and validates.
    r = subprocess.run([os.path.join(root, "usr/bin/sidetable"), "--config",
                        os.path.join(root, "etc/sidetable/sidetable.yaml"), "--workers", "0"],
                       capture_output=True, text=True)
    expect(r.returncode == 2 and "sidecar.workers" in r.stderr,
           f"the packaged config should load and then fail only on the bad flag: {r.returncode} {r.stderr}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sidetable-pkg-") as scratch:
        check_install(os.path.abspath(args.build), scratch)
        print("cmake --install: layout, units and --version ok")
        check_deb(os.path.abspath(args.build), scratch)
        print("cpack .deb: control, conffiles, scripts, layout, units and --version ok")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AssertionError as e:
        print(f"packaging: {e}")
        sys.exit(1)
