#!/usr/bin/env python3
"""Metrics docs check: the metric names the code emits and the operator docs agree.

    check_metrics_docs.py --source <repo>
    check_metrics_docs.py --self-test

Prints one line per violation, `file: rule: message`, and exits 1 if there
is any; otherwise prints a short summary and exits 0. Rules:

  undocumented  every metric name the sidecar emits (a string literal
                "sidetable_..." in a C++ source under sidecar/) is named in
                full in docs/operations.md; every one the workers emit
                (workers/) in docs/workers.md; and those in ALSO_IN_OPERATIONS
                in docs/operations.md as well
  stale         every sidetable_* name in those two documents is emitted by
                the code (a metric renamed or removed leaves no stale name);
                a family (`sidetable_cluster_*`) has a member the code emits

A histogram's series (`_bucket`, `_sum`, `_count`) count as documented when
the histogram's own name is. Python 3.11 standard library only.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile

# Where each part's metrics are documented.
DOCUMENTED_IN = {
    "sidecar": "docs/operations.md",
    "workers": "docs/workers.md",
}
# Emitted by the workers, documented for the operators of a cluster too.
ALSO_IN_OPERATIONS = ["sidetable_worker_fenced_events_total"]

SOURCE_SUFFIXES = (".h", ".cc")
LITERAL = re.compile(r'"(sidetable_[a-z0-9_]+)')
NAME_IN_DOC = re.compile(r"(?<![A-Za-z0-9_.])(sidetable_[a-z0-9_]+)(?![A-Za-z0-9_])")
HISTOGRAM_SERIES = ("_bucket", "_sum", "_count")


def emitted(source: str, part: str) -> dict[str, str]:
    """Metric name -> the first file (relative) that emits it, in `part`."""
    out: dict[str, str] = {}
    root = os.path.join(source, part)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for f in sorted(filenames):
            if not f.endswith(SOURCE_SUFFIXES):
                continue
            path = os.path.join(dirpath, f)
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            for m in LITERAL.finditer(text):
                out.setdefault(m.group(1), os.path.relpath(path, source))
    return out


def named_in(doc_text: str, name: str) -> bool:
    pattern = r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])"
    if re.search(pattern, doc_text):
        return True
    for suffix in HISTOGRAM_SERIES:
        if name.endswith(suffix) and named_in(doc_text, name[: -len(suffix)]):
            return True
    return False


def check(source: str) -> tuple[list[str], int]:
    violations: list[str] = []
    docs: dict[str, str] = {}
    for doc in set(DOCUMENTED_IN.values()):
        path = os.path.join(source, doc)
        if not os.path.exists(path):
            violations.append(f"{doc}: missing: the metrics documentation is not there")
            docs[doc] = ""
            continue
        with open(path, encoding="utf-8") as fh:
            docs[doc] = fh.read()
    all_emitted: dict[str, str] = {}
    for part, doc in sorted(DOCUMENTED_IN.items()):
        names = emitted(source, part)
        all_emitted.update(names)
        for name, where in sorted(names.items()):
            if not named_in(docs[doc], name):
                violations.append(f"{doc}: undocumented: {name} (emitted in {where}) is not named in {doc}")
    ops = DOCUMENTED_IN["sidecar"]
    for name in ALSO_IN_OPERATIONS:
        if name not in all_emitted:
            violations.append(f"tests/docs/check_metrics_docs.py: stale: ALSO_IN_OPERATIONS names {name}, "
                              "which no code emits")
        elif not named_in(docs[ops], name):
            violations.append(f"{ops}: undocumented: {name} (emitted in {all_emitted[name]}) is not named in {ops}")
    for doc, text in sorted(docs.items()):
        for name in sorted(set(NAME_IN_DOC.findall(text))):
            if name.endswith("_"):  # a family, as in `sidetable_cluster_*`
                known = any(e.startswith(name) for e in all_emitted)
            else:
                known = name in all_emitted or any(
                    name + suffix in all_emitted for suffix in HISTOGRAM_SERIES)
            if not known:
                violations.append(f"{doc}: stale: {name} is named there but no code emits it")
    return violations, len(all_emitted)


def self_test() -> int:
    def tree(files: dict[str, str]) -> str:
        root = tempfile.mkdtemp(prefix="metrics-docs-")
        for rel, text in files.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        return root

    good = {
        "sidecar/m.cc": 'counter("sidetable_a_total"); h("sidetable_d_seconds_bucket"); '
                        'h("sidetable_d_seconds_sum");\n',
        "sidecar/cluster/c.cc": 'metric("sidetable_cluster_b", "gauge");\n',
        "workers/w.cc": 'Line(&out, "sidetable_worker_fenced_events_total", "", 1);\n',
        "docs/operations.md": "`sidetable_a_total`, `sidetable_cluster_b`, the histogram "
                              "`sidetable_d_seconds`, and `sidetable_worker_fenced_events_total`; "
                              "the `sidetable_cluster_*` family.\n",
        "docs/workers.md": "| `sidetable_worker_fenced_events_total` | counter |\n",
    }
    cases = [
        ("consistent", {}, None),
        ("a sidecar metric missing from operations.md",
         {"sidecar/cluster/c.cc": 'metric("sidetable_cluster_b"); metric("sidetable_cluster_new");\n'},
         "undocumented: sidetable_cluster_new"),
        ("named only as the prefix of a longer name",
         {"docs/operations.md": "`sidetable_a_total_x`, `sidetable_cluster_b`, `sidetable_d_seconds`, "
                                "`sidetable_worker_fenced_events_total`\n"},
         "undocumented: sidetable_a_total "),
        ("the worker's fenced metric missing from operations.md",
         {"docs/operations.md": "`sidetable_a_total`, `sidetable_cluster_b`, `sidetable_d_seconds`\n"},
         "docs/operations.md: undocumented: sidetable_worker_fenced_events_total"),
        ("a worker metric missing from workers.md",
         {"docs/workers.md": "nothing\n"},
         "docs/workers.md: undocumented: sidetable_worker_fenced_events_total"),
        ("a documented name no code emits",
         {"docs/operations.md": good["docs/operations.md"] + "and `sidetable_cluster_gone_total`\n"},
         "stale: sidetable_cluster_gone_total"),
        ("a family no code emits",
         {"docs/operations.md": good["docs/operations.md"] + "the `sidetable_gone_*` metrics\n"},
         "stale: sidetable_gone_ "),
        ("no operations.md", {"docs/operations.md": None}, "missing"),
    ]
    failures = 0
    for title, change, want in cases:
        files = dict(good)
        for k, v in change.items():
            if v is None:
                files.pop(k, None)
            else:
                files[k] = v
        violations, _ = check(tree(files))
        ok = (not violations) if want is None else any(want in v for v in violations)
        if not ok:
            failures += 1
            print(f"self-test FAILED: {title}: want {want!r}, got {violations}")
    if failures:
        return 1
    print(f"self-test: {len(cases)} cases pass")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", help="the repository root")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    if not args.source:
        parser.error("--source is required")
    violations, n = check(args.source)
    for v in violations:
        print(v)
    if violations:
        return 1
    print(f"metrics docs: {n} metric names emitted, each documented; no stale names")
    return 0


if __name__ == "__main__":
    sys.exit(main())
