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
  health        every field the /health body names (the JSON keys written by
                HealthJson in sidecar/status_pages.cc, with the ServerBusy
                reasons of sidecar/admission.cc under "busy", and in
                workers/worker.cc) is named in the document's section on
                health (operations.md "Health and metrics", workers.md
                "Metrics and health"): an operator reading /health finds
                each field explained

A histogram's series (`_bucket`, `_sum`, `_count`) count as documented when
the histogram's own name is. Python 3.11 standard library only.
"""

from __future__ import annotations

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import doc_check  # noqa: E402  (beside this file)

# Where each part's metrics are documented.
DOCUMENTED_IN = {
    "sidecar": "docs/operations.md",
    "workers": "docs/workers.md",
}
# Emitted by the workers, documented for the operators of a cluster too.
ALSO_IN_OPERATIONS = ["sidetable_worker_fenced_events_total"]

# Where each /health body is written, and the section of the document that
# describes it.
HEALTH = {
    "sidecar": ("sidecar/status_pages.cc", "docs/operations.md", "## Health and metrics"),
    "workers": ("workers/worker.cc", "docs/workers.md", "## Metrics and health"),
}
# The "busy" object's keys are these names, written in a loop.
BUSY_REASONS = "sidecar/admission.cc"

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


JSON_KEY = re.compile(r'\\"([a-z_]+)\\":')
BUSY_NAMES = re.compile(r"kNames\[kBusyReasons\]\s*=\s*\{([^}]*)\}")


def read(source: str, rel: str) -> str | None:
    path = os.path.join(source, rel)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read()


def health_fields(code: str) -> list[str]:
    """The JSON keys HealthJson writes: the escaped `\"key\":` literals
    of the function's body (up to the closing brace in column 0)."""
    m = re.search(r"^std::string\s+[A-Za-z:]*HealthJson\(.*?^\}", code, re.S | re.M)
    return sorted(set(JSON_KEY.findall(m.group(0)))) if m else []


def section(text: str, heading: str) -> str:
    at = text.find(heading + "\n")
    if at < 0:
        return ""
    end = text.find("\n## ", at + len(heading))
    return text[at:] if end < 0 else text[at:end]


def check_health(source: str) -> list[str]:
    violations: list[str] = []
    for part, (code_rel, doc, heading) in sorted(HEALTH.items()):
        code = read(source, code_rel)
        text = read(source, doc) or ""
        fields = health_fields(code or "")
        if not fields:
            violations.append(f"{code_rel}: health: no HealthJson writing JSON keys found (moved? update HEALTH)")
            continue
        if part == "sidecar":
            m = BUSY_NAMES.search(read(source, BUSY_REASONS) or "")
            if not m:
                violations.append(f"{BUSY_REASONS}: health: the ServerBusy reasons (kNames) are not found")
            else:
                fields = sorted(set(fields) | set(re.findall(r'"([a-z_]+)"', m.group(1))))
        described = section(text, heading)
        if not described:
            violations.append(f"{doc}: health: no section '{heading}'")
            continue
        for field in fields:
            if not named_in(described, field):
                violations.append(f"{doc}: health: /health field {field} (written in {code_rel}) is not named "
                                  f"in '{heading[3:]}'")
    return violations


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
    violations += check_health(source)
    return violations, len(all_emitted)


def self_test() -> int:
    # The /health bodies, as the C++ writes them (escaped quotes), and the
    # documents' sections describing them.
    sidecar_health = ('std::string HealthJson(Server& server) {\n'
                      '  std::string body = "{\\"status\\":\\"" + s + "\\",\\"lsn\\":" + n + ",\\"busy\\":{";\n'
                      '  return body;\n}\n')
    worker_health = ('std::string Worker::Impl::HealthJson() const {\n'
                     '  return "{\\"status\\":\\"" + s + "\\",\\"group\\":" + g;\n}\n')
    ops_health = '\n## Health and metrics\n\n`{"status":"ok","lsn":n,"busy":{"queue_full":n}}`\n'
    workers_health = '\n## Metrics and health\n\n`{"status":"ok","group":...}`\n'
    good = {
        "sidecar/m.cc": 'counter("sidetable_a_total"); h("sidetable_d_seconds_bucket"); '
                        'h("sidetable_d_seconds_sum");\n',
        "sidecar/cluster/c.cc": 'metric("sidetable_cluster_b", "gauge");\n',
        "sidecar/status_pages.cc": sidecar_health,
        "sidecar/admission.cc": 'static constexpr std::string_view kNames[kBusyReasons] = {\n    "queue_full"};\n',
        "workers/w.cc": 'Line(&out, "sidetable_worker_fenced_events_total", "", 1);\n',
        "workers/worker.cc": worker_health,
        "docs/operations.md": "`sidetable_a_total`, `sidetable_cluster_b`, the histogram "
                              "`sidetable_d_seconds`, and `sidetable_worker_fenced_events_total`; "
                              "the `sidetable_cluster_*` family.\n" + ops_health,
        "docs/workers.md": "| `sidetable_worker_fenced_events_total` | counter |\n" + workers_health,
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
        ("a sidecar /health field missing from operations.md",
         {"sidecar/status_pages.cc": sidecar_health.replace('\\"lsn\\":', '\\"lsn\\":" + n + ",\\"new_field\\":')},
         "docs/operations.md: health: /health field new_field"),
        ("a ServerBusy reason missing from the /health description",
         {"sidecar/admission.cc": 'kNames[kBusyReasons] = {"queue_full", "tenant_quota"};\n'},
         "health: /health field tenant_quota"),
        ("named outside the health section only",
         {"docs/operations.md": good["docs/operations.md"].replace(',"lsn":n', "") + "\n## Other\n`lsn`\n"},
         "health: /health field lsn"),
        ("a worker /health field missing from workers.md",
         {"workers/worker.cc": worker_health.replace('\\"group\\":', '\\"group\\":" + g + ",\\"lag_x\\":')},
         "docs/workers.md: health: /health field lag_x"),
        ("no HealthJson where the sidecar's /health is written",
         {"sidecar/status_pages.cc": "// moved\n"},
         "sidecar/status_pages.cc: health: no HealthJson"),
    ]
    return doc_check.run_self_test(check, good, cases)


def main() -> int:
    return doc_check.main(__doc__.splitlines()[0], check, self_test,
                          "metrics docs: {n} metric names emitted, each documented; no stale names")


if __name__ == "__main__":
    sys.exit(main())
