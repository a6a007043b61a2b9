#!/usr/bin/env python3
"""Layout check: keeps the folders of sidetable true to the map.

    check_layout.py --source <repo> [--build <cmake build dir>]
    check_layout.py --self-test

Prints one line per violation, `file:line: rule: message`, and exits 1 if
there is any; otherwise prints a short summary and exits 0. Rules (the data
they use is right below):

  include-deps     a file in part P includes only headers of P and of the
                   parts P may depend on (ALLOWED)
  sidecar-private  nothing outside sidecar/ (and SIDECAR_USERS) includes a
                   sidecar/ header
  engine-internal  engine/internal/ headers only for ENGINE_INTERNAL_USERS
  unknown-part     a source file, or an included project file, that is in
                   no part of PARTS
  link             executables in LINK_RULES must not (or must) link the
                   libraries named there; read from <build>/build.ninja
  part-cycle       the part-level include graph has no cycle
  readme           every folder in README_REQUIRED has a README.md
  md-link          every relative Markdown link in README.md files and
                   docs/*.md points at something inside the repository

Python 3.11 standard library only. See tests/layout/README.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
import tempfile
import urllib.parse

# ----------------------------------------------------------------------------
# The rules, as data.
# ----------------------------------------------------------------------------

# Top-level parts. A file belongs to the part named by its first path
# component (tools/cli/x.cc is in `tools`, tests/engine/x.cc in `tests`).
PARTS = [
    "engine", "protocol", "events", "common", "client", "patterns", "apply",
    "sidecar", "workers", "tools", "testing", "bench", "tests",
]

# Which parts each part may include (besides itself). `engine` means the
# engine's public headers (engine/*.h, engine/query/*.h); engine/internal/ is
# governed by ENGINE_INTERNAL_USERS and sidecar/ by SIDECAR_USERS, so those two
# are reported by their own rules, not by include-deps.
ALLOWED = {
    "engine":   set(),
    "protocol": {"engine"},
    "events":   {"engine"},
    "common":   {"engine"},                  # engine/status.h
    "client":   {"protocol", "engine"},
    "patterns": {"engine"},
    "apply":    {"patterns", "events", "client", "engine"},
    "sidecar":  {"engine", "protocol", "events", "common"},
    "workers":  {"apply", "patterns", "events", "common", "client", "engine"},
    "tools":    {"client", "events", "apply", "common", "patterns", "engine"},
    "testing":  {"client", "engine", "common", "protocol", "events"},
    "bench":    set(PARTS) - {"bench", "sidecar", "tests"},
    "tests":    set(PARTS) - {"tests", "sidecar"},
}

# Path prefixes allowed to include sidecar/ headers: the sidecar and the tests
# of its own internals. tests/fuzz/ follows the `tests` row; a fuzz target
# aimed at sidecar internals would be added here by its file path.
SIDECAR_PREFIX = "sidecar/"
SIDECAR_USERS = ["sidecar/", "tests/sidecar/", "tests/changestream/"]

# Path prefixes allowed to include engine/internal/ headers. bench/ uses them
# for its raw RocksDB reference.
ENGINE_INTERNAL_PREFIX = "engine/internal/"
ENGINE_INTERNAL_USERS = ["engine/", "tests/engine/", "bench/"]

SOURCE_SUFFIXES = (".h", ".cc", ".hh", ".hpp", ".cpp", ".cxx", ".ipp")

# Folders that must hold a README.md.
README_REQUIRED = [
    "engine", "protocol", "events", "common", "client", "patterns", "apply",
    "sidecar", "workers", "tools", "tools/cli", "tools/replay", "tools/kafka-mock", "testing",
    "bench", "tests",
]

# Link rules: (executable target, forbidden library keys, required keys).
# A target that is not in build.ninja is a violation too.
FORBIDDEN_IN_CLIENT_PROCESSES = [
    "librocksdb", "libst_engine.a", "libst_query.a", "libst_server.a",
    "libst_changestream.a",
]
LINK_RULES = [
    ("sidetable-worker", FORBIDDEN_IN_CLIENT_PROCESSES, []),
    ("sidetable-cli", FORBIDDEN_IN_CLIENT_PROCESSES, []),
    ("sidetable-demo", FORBIDDEN_IN_CLIENT_PROCESSES, []),
    ("sidetable-kafka-mock", FORBIDDEN_IN_CLIENT_PROCESSES, []),
    # The positive control: proves the parser sees RocksDB and the engine.
    ("sidetable", [], ["librocksdb", "libst_engine.a"]),
]


def _exact(name):
    return lambda tok, base: base == name


# How a library key is recognised in a ninja token (tok) or its basename.
LIBRARY_MATCHERS = {
    "librocksdb": lambda tok, base: bool(
        re.match(r"^librocksdb([._-].*)?$", base)
        or re.match(r"^-l:?(lib)?rocksdb([._-].*)?$", tok)),
    "libst_engine.a": _exact("libst_engine.a"),
    "libst_query.a": _exact("libst_query.a"),
    "libst_server.a": _exact("libst_server.a"),
    "libst_changestream.a": _exact("libst_changestream.a"),
}

# ----------------------------------------------------------------------------
# Trees: the repository on disk, or a dict for the self-test.
# ----------------------------------------------------------------------------


class Tree:
    """Relative paths ('/'-separated) of the files of a tree, and their text."""

    def __init__(self, files: dict[str, str | None], root: str | None = None):
        self.root = root
        self._files = files
        self._dirs = {""}
        for p in files:
            parts = p.split("/")
            for i in range(1, len(parts)):
                self._dirs.add("/".join(parts[:i]))

    @classmethod
    def from_disk(cls, root: str, skip: list[str]) -> "Tree":
        root = os.path.abspath(root)
        skip_abs = {os.path.abspath(s) for s in skip}
        files: dict[str, str | None] = {}
        for dirpath, dirnames, filenames in os.walk(root):
            rel_dir = os.path.relpath(dirpath, root)
            keep = []
            for d in dirnames:
                full = os.path.join(dirpath, d)
                # node_modules: npm's packages (tests/rest_sdk), not ours; their
                # READMEs link to files npm does not install.
                if d in (".git", "node_modules") or full in skip_abs:
                    continue
                if rel_dir == "." and d.startswith("build"):
                    continue
                if os.path.exists(os.path.join(full, "CMakeCache.txt")):
                    continue  # a build tree somewhere else in the checkout
                keep.append(d)
            dirnames[:] = sorted(keep)
            for f in filenames:
                rel = os.path.normpath(os.path.join(rel_dir, f)).replace(os.sep, "/")
                files[rel] = None  # read lazily
        return cls(files, root)

    def paths(self):
        return sorted(self._files)

    def is_file(self, rel: str) -> bool:
        return rel in self._files

    def exists(self, rel: str) -> bool:
        rel = rel.rstrip("/")
        return rel in self._files or rel in self._dirs

    def read(self, rel: str) -> str:
        text = self._files[rel]
        if text is None:
            with open(os.path.join(self.root, rel), encoding="utf-8",
                      errors="replace") as f:
                text = f.read()
            self._files[rel] = text
        return text


@dataclasses.dataclass(frozen=True)
class Violation:
    where: str  # file:line
    rule: str
    message: str

    def __str__(self):
        return f"{self.where}: {self.rule}: {self.message}"


@dataclasses.dataclass(frozen=True)
class Include:
    src: str        # including file
    line: int
    target: str     # repository-relative path of the included file
    src_part: str
    tgt_part: str


def part_of(path: str) -> str | None:
    first = path.split("/", 1)[0]
    return first if first in PARTS and "/" in path else None


def _under(path: str, prefixes) -> bool:
    return any(path.startswith(p) for p in prefixes)


# ----------------------------------------------------------------------------
# Rule 1 data: every #include "..." of the parts.
# ----------------------------------------------------------------------------

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def collect_includes(tree: Tree):
    """Returns (includes, violations, number of source files)."""
    includes, violations, nsources = [], [], 0
    for path in tree.paths():
        if not path.endswith(SOURCE_SUFFIXES):
            continue
        src_part = part_of(path)
        if src_part is None:
            violations.append(Violation(
                f"{path}:1", "unknown-part",
                "source file outside the parts; move it into one, or add its "
                "folder to PARTS and ALLOWED"))
            continue
        nsources += 1
        for lineno, line in enumerate(tree.read(path).splitlines(), 1):
            m = INCLUDE_RE.match(line)
            if not m:
                continue
            inc = m.group(1)
            # The compiler looks beside the including file first.
            beside = os.path.normpath(
                os.path.join(os.path.dirname(path), inc)).replace(os.sep, "/")
            if tree.is_file(beside):
                target = beside
            else:  # then the include path: the repository root
                target = os.path.normpath(inc).replace(os.sep, "/")
            if target.startswith("../"):
                violations.append(Violation(
                    f"{path}:{lineno}", "unknown-part",
                    f'"{inc}" leaves the repository'))
                continue
            tgt_part = part_of(target)
            if tgt_part is None:
                if tree.is_file(target):
                    violations.append(Violation(
                        f"{path}:{lineno}", "unknown-part",
                        f'"{inc}" is a project file in no part'))
                continue  # a third-party header spelled with quotes
            includes.append(Include(path, lineno, target, src_part, tgt_part))
    return includes, violations, nsources


def rule_include_deps(includes):
    out = []
    for i in includes:
        if i.target.startswith(SIDECAR_PREFIX) or i.target.startswith(ENGINE_INTERNAL_PREFIX):
            continue  # their own rules below
        if i.tgt_part == i.src_part or i.tgt_part in ALLOWED[i.src_part]:
            continue
        allowed = ", ".join(sorted(ALLOWED[i.src_part])) or "nothing"
        out.append(Violation(
            f"{i.src}:{i.line}", "include-deps",
            f"{i.src_part}/ includes {i.target} ({i.tgt_part}/); "
            f"{i.src_part}/ may include only itself and: {allowed}"))
    return out


def rule_sidecar_private(includes):
    return [Violation(f"{i.src}:{i.line}", "sidecar-private",
                      f"includes {i.target}: only {', '.join(SIDECAR_USERS)} "
                      "may include sidecar/ headers")
            for i in includes
            if i.target.startswith(SIDECAR_PREFIX) and not _under(i.src, SIDECAR_USERS)]


def rule_engine_internal(includes):
    return [Violation(f"{i.src}:{i.line}", "engine-internal",
                      f"includes {i.target}: only {', '.join(ENGINE_INTERNAL_USERS)} "
                      "may include engine/internal/ headers")
            for i in includes
            if i.target.startswith(ENGINE_INTERNAL_PREFIX)
            and not _under(i.src, ENGINE_INTERNAL_USERS)]


# ----------------------------------------------------------------------------
# Rule 4: cycles in the part-level include graph.
# ----------------------------------------------------------------------------


def find_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one node."""
    index, low, on_stack, stack, sccs = {}, {}, set(), [], []
    counter = [0]

    def strongconnect(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(set(comp))

    nodes = set(edges) | {w for ws in edges.values() for w in ws}
    for v in sorted(nodes):
        if v not in index:
            strongconnect(v)

    cycles = []
    for comp in sorted(sccs, key=min):
        start = min(comp)
        # Shortest path back to start inside the component (BFS).
        prev, queue, found = {start: None}, [start], None
        while queue and found is None:
            v = queue.pop(0)
            for w in sorted(edges.get(v, ())):
                if w not in comp:
                    continue
                if w == start:
                    found = v
                    break
                if w not in prev:
                    prev[w] = v
                    queue.append(w)
        path, v = [], found
        while v is not None:
            path.append(v)
            v = prev[v]
        cycles.append(list(reversed(path)) + [start])
    return cycles


def scc_of(edges, v):
    """The parts that reach v and are reached from it."""
    def reach(start, nxt):
        seen, todo = {start}, [start]
        while todo:
            for w in nxt(todo.pop()):
                if w not in seen:
                    seen.add(w)
                    todo.append(w)
        return seen
    rev: dict[str, set[str]] = {}
    for a, bs in edges.items():
        for b in bs:
            rev.setdefault(b, set()).add(a)
    return reach(v, lambda x: edges.get(x, ())) & reach(v, lambda x: rev.get(x, ()))


def rule_part_cycles(includes):
    edges: dict[str, set[str]] = {}
    example: dict[tuple[str, str], Include] = {}
    for i in includes:
        if i.src_part != i.tgt_part:
            edges.setdefault(i.src_part, set()).add(i.tgt_part)
            example.setdefault((i.src_part, i.tgt_part), i)
    out = []
    for cyc in find_cycles(edges):
        hops = [example[(a, b)] for a, b in zip(cyc, cyc[1:])]
        detail = "; ".join(f"{a}->{b} at {h.src}:{h.line}"
                           for (a, b), h in zip(zip(cyc, cyc[1:]), hops))
        members = {p for p in cyc}
        more = sorted(scc_of(edges, cyc[0]) - members)
        also = f"; also in the cycle: {', '.join(more)}" if more else ""
        out.append(Violation(f"{hops[0].src}:{hops[0].line}", "part-cycle",
                             " -> ".join(cyc) + f" ({detail}{also})"))
    return out


# ----------------------------------------------------------------------------
# Rule 3: link lines from build.ninja.
# ----------------------------------------------------------------------------


def _split_ninja(s: str) -> list[str]:
    """Splits on unescaped spaces and unescapes $ , $: and $$."""
    toks, cur, i = [], [], 0
    while i < len(s):
        c = s[i]
        if c == "$" and i + 1 < len(s):
            cur.append(s[i + 1] if s[i + 1] in " :$" else c + s[i + 1])
            i += 2
            continue
        if c == " ":
            if cur:
                toks.append("".join(cur))
                cur = []
        else:
            cur.append(c)
        i += 1
    if cur:
        toks.append("".join(cur))
    return toks


def _unescaped_colon(s: str) -> int:
    i = 0
    while i < len(s):
        if s[i] == "$":
            i += 2
            continue
        if s[i] == ":":
            return i
        i += 1
    return -1


def parse_ninja(text: str, name: str, load=None):
    """Returns the build edges: dicts with outputs, rule, inputs, vars, where.
    `load(path)` returns the text of include/subninja files (or None)."""
    # Join `$`-continued lines, remembering each logical line's first line.
    logical, buf, start = [], "", 0
    for n, raw in enumerate(text.splitlines(), 1):
        if not buf:
            start = n
        stripped = raw
        if stripped.endswith("$") and not stripped.endswith("$$"):
            buf += stripped[:-1]
            continue
        logical.append((start, buf + stripped if buf else stripped))
        buf = ""
    if buf:
        logical.append((start, buf))

    edges, cur = [], None
    for n, line in logical:
        if line.startswith("build "):
            body = line[len("build "):]
            colon = _unescaped_colon(body)
            outs = [t for t in _split_ninja(body[:colon]) if t != "|"]
            rest = _split_ninja(body[colon + 1:])
            rule, ins = (rest[0], [t for t in rest[1:] if t not in ("|", "||", "|@")]) if rest else ("", [])
            cur = {"outputs": outs, "rule": rule, "inputs": ins, "vars": {},
                   "where": f"{name}:{n}"}
            edges.append(cur)
        elif cur is not None and line[:1] in (" ", "\t") and "=" in line:
            k, v = line.strip().split("=", 1)
            cur["vars"][k.strip()] = v.strip()
        else:
            cur = None
            m = re.match(r"^(include|subninja)\s+(\S+)", line)
            if m and load is not None:
                sub = load(m.group(2))
                if sub is not None:
                    edges.extend(parse_ninja(sub[1], sub[0], load))
    return edges


def _link_tokens(edge):
    toks = list(edge["inputs"])
    for k, v in edge["vars"].items():
        if k.startswith("LINK"):
            toks.extend(_split_ninja(v))
    return toks


def find_link_edge(edges, target: str):
    prefix = f"CXX_EXECUTABLE_LINKER__{target}_"
    for e in edges:
        if not e["rule"].startswith(prefix):
            continue
        tf = e["vars"].get("TARGET_FILE", e["outputs"][0] if e["outputs"] else "")
        base = os.path.basename(tf)
        if base in (target, target + ".exe"):
            return e
    return None


def rule_links(edges, ninja_name: str):
    out = []
    for target, forbidden, required in LINK_RULES:
        e = find_link_edge(edges, target)
        if e is None:
            out.append(Violation(f"{ninja_name}:1", "link",
                                 f"no link edge for executable {target}: "
                                 "renamed or no longer built? update LINK_RULES"))
            continue
        toks = _link_tokens(e)
        seen = {}
        for tok in toks:
            base = os.path.basename(tok)
            for key, match in LIBRARY_MATCHERS.items():
                if match(tok, base):
                    seen.setdefault(key, tok)
        for key in forbidden:
            if key in seen:
                out.append(Violation(e["where"], "link",
                                     f"{target} links {key} ({seen[key]}); "
                                     "it must not link the engine, RocksDB or the server"))
        for key in required:
            if key not in seen:
                out.append(Violation(e["where"], "link",
                                     f"{target} does not link {key}: expected it to "
                                     "(the positive control), is the parser still right?"))
    return out


def load_ninja(build_dir: str):
    path = os.path.join(build_dir, "build.ninja")
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()

    def load(rel):
        p = os.path.join(build_dir, rel)
        if not os.path.isfile(p):
            return None
        with open(p, encoding="utf-8", errors="replace") as f:
            return (p, f.read())

    return parse_ninja(text, path, load), path


# ----------------------------------------------------------------------------
# Rule 5: READMEs and Markdown links.
# ----------------------------------------------------------------------------

MD_INLINE_RE = re.compile(r'!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+["\'(][^)]*)?\s*\)')
MD_REFDEF_RE = re.compile(r'^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)')
MD_SCHEME_RE = re.compile(r'^[A-Za-z][A-Za-z0-9+.-]*:')
MD_CODE_RE = re.compile(r'(`+)(.+?)\1')


def rule_readmes(tree: Tree):
    return [Violation(f"{d}/README.md:1", "readme", f"{d}/ has no README.md")
            for d in README_REQUIRED
            if tree.exists(d) and not tree.is_file(f"{d}/README.md")] + \
           [Violation(f"{d}/:1", "readme", f"part folder {d}/ is missing")
            for d in README_REQUIRED if not tree.exists(d)]


def markdown_files(tree: Tree):
    return [p for p in tree.paths()
            if p.rsplit("/", 1)[-1] == "README.md"
            or (p.startswith("docs/") and p.endswith(".md") and p.count("/") == 1)]


def rule_md_links(tree: Tree):
    out = []
    for path in markdown_files(tree):
        fence = None
        for lineno, line in enumerate(tree.read(path).splitlines(), 1):
            m = re.match(r'^\s{0,3}(`{3,}|~{3,})', line)
            if m:
                if fence is None:
                    fence = m.group(1)
                elif m.group(1).startswith(fence[0]) and len(m.group(1)) >= len(fence):
                    fence = None
                continue
            if fence is not None:
                continue
            text = MD_CODE_RE.sub("", line)
            targets = [m.group(1) for m in MD_INLINE_RE.finditer(text)]
            m = MD_REFDEF_RE.match(text)
            if m:
                targets.append(m.group(1))
            for t in targets:
                t = t.strip("<>")
                if not t or t.startswith("#") or MD_SCHEME_RE.match(t):
                    continue
                rel = urllib.parse.unquote(t.split("#", 1)[0].split("?", 1)[0])
                if rel.startswith("/"):
                    resolved = os.path.normpath(rel.lstrip("/"))
                else:
                    resolved = os.path.normpath(os.path.join(os.path.dirname(path), rel))
                resolved = resolved.replace(os.sep, "/")
                if resolved == ".." or resolved.startswith("../"):
                    out.append(Violation(f"{path}:{lineno}", "md-link",
                                         f"({t}) points outside the repository"))
                elif resolved != "." and not tree.exists(resolved):
                    out.append(Violation(f"{path}:{lineno}", "md-link",
                                         f"({t}): {resolved} does not exist"))
    return out


# ----------------------------------------------------------------------------
# Running it.
# ----------------------------------------------------------------------------


def check_table():
    """The ALLOWED table itself: known parts only, and no cycle."""
    out = []
    for p in PARTS:
        if p not in ALLOWED:
            out.append(Violation("tests/layout/check_layout.py:1", "table", f"ALLOWED has no row for {p}"))
    for p, deps in ALLOWED.items():
        for d in deps - set(PARTS):
            out.append(Violation("tests/layout/check_layout.py:1", "table", f"ALLOWED[{p}] names unknown part {d}"))
    for cyc in find_cycles({p: set(d) for p, d in ALLOWED.items()}):
        out.append(Violation("tests/layout/check_layout.py:1", "table",
                             "ALLOWED permits a cycle: " + " -> ".join(cyc)))
    return out


def check_source(tree: Tree):
    includes, violations, nsources = collect_includes(tree)
    violations += rule_include_deps(includes)
    violations += rule_sidecar_private(includes)
    violations += rule_engine_internal(includes)
    violations += rule_part_cycles(includes)
    violations += rule_readmes(tree)
    violations += rule_md_links(tree)
    return violations, includes, nsources


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", help="the repository root")
    ap.add_argument("--build", help="the CMake build directory (Ninja generator)")
    ap.add_argument("--self-test", action="store_true",
                    help="check the rules on small fake trees, then exit")
    args = ap.parse_args(argv)
    if args.self_test:
        return self_test()
    if not args.source:
        ap.error("--source is required (or --self-test)")

    violations = check_table()
    skip = [args.build] if args.build else []
    tree = Tree.from_disk(args.source, skip)
    src_violations, includes, nsources = check_source(tree)
    violations += src_violations
    if nsources == 0 or not includes:
        violations.append(Violation(f"{args.source}:1", "unknown-part",
                                    "found no sources or no project includes: wrong --source?"))

    link_note = ""
    if args.build:
        ninja = os.path.join(args.build, "build.ninja")
        if not os.path.isfile(ninja):
            print(f"{ninja}: link: build.ninja is missing; configure with "
                  "`cmake -G Ninja` first (the link rule reads the Ninja file)")
            return 1
        edges, ninja_path = load_ninja(args.build)
        violations += rule_links(edges, ninja_path)
        link_note = f", {len(LINK_RULES)} link rules on {len(edges)} ninja edges"
    else:
        print("note: no --build given, link rule skipped")

    for v in violations:
        print(v)
    if violations:
        print(f"layout check: {len(violations)} violation(s)")
        return 1
    parts = {i.src_part for i in includes}
    print(f"layout check ok: {nsources} source files in {len(parts)} parts, "
          f"{len(includes)} project includes, {len(markdown_files(tree))} "
          f"Markdown files{link_note}")
    return 0


# ----------------------------------------------------------------------------
# --self-test: every rule must catch a fake breach and pass a clean fake tree.
# ----------------------------------------------------------------------------

NINJA_SNIPPET = """\
rule CXX_EXECUTABLE_LINKER__sidetable_Debug
  command = c++ $in -o $out $LINK_LIBRARIES

build sidecar/sidetable: CXX_EXECUTABLE_LINKER__sidetable_Debug sidecar/main.cc.o | sidecar/libst_server.a engine/libst_engine.a /usr/lib/librocksdb.a || engine/libst_engine.a
  LINK_LIBRARIES = sidecar/libst_server.a  engine/libst_engine.a  /usr/lib/librocksdb.a
  TARGET_FILE = sidecar/sidetable

build workers/sidetable-worker: CXX_EXECUTABLE_LINKER__sidetable-worker_Debug workers/main.cc.o | apply/libst_apply.a {worker_input} $
    client/libst_client.a
  LINK_LIBRARIES = apply/libst_apply.a  client/libst_client.a {worker_lib}
  TARGET_FILE = workers/sidetable-worker

build tools/cli/sidetable-cli tools/cli/sidetable-cli[1]_tests.cmake: CXX_EXECUTABLE_LINKER__sidetable-cli_Debug tools/cli/main.cc.o | client/libst_client.a
  LINK_LIBRARIES = client/libst_client.a
  TARGET_FILE = tools/cli/sidetable-cli

build tools/sidetable-demo: CXX_EXECUTABLE_LINKER__sidetable-demo_Debug tools/demo.cc.o | client/libst_client.a
  LINK_LIBRARIES = client/libst_client.a
  TARGET_FILE = tools/sidetable-demo

build tools/kafka-mock/sidetable-kafka-mock: CXX_EXECUTABLE_LINKER__sidetable-kafka-mock_Debug tools/kafka-mock/main.cc.o | common/libst_embedded_kafka.a
  LINK_LIBRARIES = common/libst_embedded_kafka.a  common/libst_common.a  -lrdkafka
  TARGET_FILE = tools/kafka-mock/sidetable-kafka-mock
"""


def _clean_tree_files():
    files = {d + "/README.md": f"# {d}\n" for d in README_REQUIRED}
    files.update({
        "README.md": "[engine](engine/README.md), [web](https://example.com), "
                     "[top](#top), [docs](docs/a.md#section), [dir](engine/)\n"
                     "```\n[in a fence](nowhere.md)\n```\n`[in code](nowhere.md)`\n",
        "docs/a.md": "[back](../README.md) [ref]\n\n[ref]: ../engine/README.md\n",
        "engine/status.h": "#pragma once\n",
        "engine/engine.h": '#include "engine/status.h"\n',
        "engine/internal/codec.h": '#include "engine/status.h"\n',
        "engine/codec.cc": '#include "engine/internal/codec.h"\n#include "utf8.h"\n',
        "engine/utf8.h": "",
        "protocol/wire.h": '#include "engine/status.h"\n#include <rocksdb_not_ours.h>\n',
        "client/client.cc": '#include "protocol/wire.h"\n#include "client/client.h"\n',
        "client/client.h": '#include "engine/status.h"\n#include "third_party.h"\n',
        "sidecar/server.h": '#include "protocol/wire.h"\n',
        "workers/worker.cc": '#include "client/client.h"\n',
        "apply/op_applier.cc": '#include "patterns/pattern.h"\n',
        "patterns/pattern.h": '#include "engine/engine.h"\n',
        "tests/sidecar/server_test.cc": '#include "sidecar/server.h"\n',
        "tests/engine/codec_test.cc": '#include "engine/internal/codec.h"\n',
        "bench/stores.cc": '#include "engine/internal/codec.h"\n#include "testing/t.h"\n',
        "testing/t.h": '#include "client/client.h"\n',
    })
    return files


def _rules_hit(files):
    violations, _, _ = check_source(Tree(files))
    return violations


def self_test():
    failures, checked = [], [0]

    def expect(name, violations, rule, where_prefix=None):
        checked[0] += 1
        hits = [v for v in violations if v.rule == rule
                and (where_prefix is None or v.where.startswith(where_prefix))]
        if not hits:
            failures.append(f"{name}: expected a `{rule}` violation"
                            + (f" at {where_prefix}" if where_prefix else "")
                            + f", got {[str(v) for v in violations]}")

    def expect_none(name, violations):
        checked[0] += 1
        if violations:
            failures.append(f"{name}: expected no violation, got "
                            f"{[str(v) for v in violations]}")

    expect_none("the ALLOWED table", check_table())
    clean = _clean_tree_files()
    expect_none("clean fake tree", _rules_hit(clean))

    cases = [
        ("engine includes protocol", {"engine/batch.h": '#include "protocol/wire.h"\n'},
         "include-deps", "engine/batch.h:1"),
        ("workers include tools", {"workers/w.cc": '\n#include "tools/cli/commands.h"\n'},
         "include-deps", "workers/w.cc:2"),
        ("client includes events", {"client/c.cc": '#include "events/event.h"\n'},
         "include-deps", "client/c.cc:1"),
        ("bench includes tests", {"bench/b.cc": '#include "tests/engine/f.h"\n'},
         "include-deps", "bench/b.cc:1"),
        ("workers include sidecar", {"workers/w.cc": '#include "sidecar/server.h"\n'},
         "sidecar-private", "workers/w.cc:1"),
        ("tests/replay includes sidecar", {"tests/replay/r.cc": '#include "sidecar/server.h"\n'},
         "sidecar-private", "tests/replay/r.cc:1"),
        ("bench includes sidecar", {"bench/b.cc": '#include "sidecar/server.h"\n'},
         "sidecar-private", "bench/b.cc:1"),
        ("tools include engine/internal", {"tools/t.cc": '#include "engine/internal/codec.h"\n'},
         "engine-internal", "tools/t.cc:1"),
        ("tests/replay includes engine/internal",
         {"tests/replay/r.cc": '#include "engine/internal/codec.h"\n'},
         "engine-internal", "tests/replay/r.cc:1"),
        ("relative include into internal",
         {"engine/query/q.cc": '#include "../internal/codec.h"\n'}, None, None),
        ("protocol <-> events cycle",
         {"protocol/p.h": '#include "events/e.h"\n', "events/e.h": '#include "protocol/p.h"\n'},
         "part-cycle", None),
        ("source outside the parts", {"cmake/probe.cc": ""}, "unknown-part", "cmake/probe.cc:1"),
        ("missing README", {"apply/README.md": None}, "readme", "apply/README.md"),
        ("broken relative link", {"docs/b.md": "see [x](missing.md#part)\n"},
         "md-link", "docs/b.md:1"),
        ("link outside the repository",
         {"docs/b.md": "the [map](../../shared/ARCHITECTURE.md)\n"}, "md-link", "docs/b.md:1"),
        ("broken link in a nested README",
         {"tools/cli/README.md": "[doc](../docs/cli.md)\n"}, "md-link", "tools/cli/README.md:1"),
    ]
    for name, change, rule, where in cases:
        files = dict(clean)
        for k, v in change.items():
            if v is None:
                files.pop(k, None)
            else:
                files[k] = v
        violations = _rules_hit(files)
        if rule is None:  # relative include must be seen as engine/internal: fine from engine/
            expect_none(name, violations)
            incs, _, _ = collect_includes(Tree(files))
            if not any(i.target == "engine/internal/codec.h" and i.src == "engine/query/q.cc"
                       for i in incs):
                failures.append(f"{name}: relative include not resolved")
            continue
        expect(name, violations, rule, where)

    # A relative include of an internal header from outside the engine.
    files = dict(clean)
    files["tools/x/t.cc"] = '#include "../../engine/internal/codec.h"\n'
    expect("relative include of engine/internal from tools", _rules_hit(files),
           "engine-internal", "tools/x/t.cc:1")

    # The link rule.
    def ninja(worker_input="", worker_lib=""):
        return parse_ninja(NINJA_SNIPPET.format(worker_input=worker_input,
                                                worker_lib=worker_lib), "fake.ninja")

    expect_none("clean ninja", rule_links(ninja(), "fake.ninja"))
    expect("worker with librocksdb.a input",
           rule_links(ninja(worker_input="/usr/lib/x86_64-linux-gnu/librocksdb.a"), "fake.ninja"),
           "link", "fake.ninja:8")
    expect("worker with -lrocksdb", rule_links(ninja(worker_lib="-lrocksdb"), "fake.ninja"),
           "link", "fake.ninja:8")
    expect("worker with librocksdb.so.8 on a continued line",
           rule_links(parse_ninja(NINJA_SNIPPET.format(worker_input="", worker_lib="")
                                  .replace("    client/libst_client.a",
                                           "    /opt/lib/librocksdb.so.8"), "fake.ninja"),
                      "fake.ninja"),
           "link", "fake.ninja:8")
    expect("worker with libst_engine.a",
           rule_links(ninja(worker_lib="engine/libst_engine.a"), "fake.ninja"),
           "link", "fake.ninja:8")
    expect("worker with libst_changestream.a",
           rule_links(ninja(worker_input="sidecar/libst_changestream.a"), "fake.ninja"),
           "link", "fake.ninja:8")
    no_rocks = NINJA_SNIPPET.format(worker_input="", worker_lib="").replace(
        "/usr/lib/librocksdb.a", "/usr/lib/libz.so")
    expect("sidetable without RocksDB (positive control)",
           rule_links(parse_ninja(no_rocks, "fake.ninja"), "fake.ninja"), "link", "fake.ninja:4")
    no_demo = NINJA_SNIPPET.format(worker_input="", worker_lib="").replace(
        "sidetable-demo", "sidetable-other")
    expect("missing executable", rule_links(parse_ninja(no_demo, "fake.ninja"), "fake.ninja"),
           "link", "fake.ninja:1")

    # main() on a missing build.ninja exits 1.
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "src"))
        devnull = open(os.devnull, "w")
        saved, sys.stdout = sys.stdout, devnull
        try:
            rc = main(["--source", os.path.join(tmp, "src"), "--build", os.path.join(tmp, "b")])
        finally:
            sys.stdout = saved
            devnull.close()
        if rc != 1:
            failures.append(f"missing build.ninja: expected exit 1, got {rc}")

    for f in failures:
        print(f"self-test FAILED: {f}")
    if failures:
        return 1
    print(f"layout self-test ok: {checked[0]} checks")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
