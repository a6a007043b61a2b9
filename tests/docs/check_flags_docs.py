#!/usr/bin/env python3
"""Flags docs check: every command-line flag of the programs users and
operators run is explained somewhere in the documentation.

    check_flags_docs.py --source <repo>
    check_flags_docs.py --self-test

Prints one line per violation, `file: rule: message`, and exits 1 if there
is any; otherwise prints a short summary and exits 0. Rule:

  undocumented  every long flag a program declares (CLI11's add_option,
                add_flag, add_option_function in the files of PROGRAMS) is
                named in full in README.md, a part's README.md or docs/*.md:
                `--help` shows it, so a reader of the docs must find what it
                does and which configuration key it overrides

A flag is named when it appears with nothing of a longer flag after it
(`--max-inflight-bytes` does not count for `--max-inflight-bytes-per-connection`).
Python 3.11 standard library only.
"""

from __future__ import annotations

import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import doc_check  # noqa: E402  (beside this file)

# The sources declaring each program's flags (relative; globs allowed).
PROGRAMS = {
    "sidetable": ["sidecar/main.cc"],
    "sidetable-worker": ["workers/main.cc"],
    "sidetable-cli": ["tools/cli/*.cc"],
    "sidetable-demo": ["tools/demo/demo.cc"],
    "sidetable-kafka-mock": ["tools/kafka-mock/*.cc"],
    "sidetable-loadgen": ["bench/loadgen/loadgen.cc"],
}
DOCS = ["README.md", "*/README.md", "*/*/README.md", "docs/*.md"]

DECLARED = re.compile(r'add_(?:option|flag|option_function<[^>]*>)\(\s*"([^"]+)"')


def declared(source: str) -> dict[str, tuple[str, str]]:
    """Flag -> (program, first file declaring it)."""
    out: dict[str, tuple[str, str]] = {}
    for program, patterns in sorted(PROGRAMS.items()):
        for pattern in patterns:
            for path in sorted(glob.glob(os.path.join(source, pattern))):
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                for m in DECLARED.finditer(text):
                    for name in m.group(1).split(","):
                        name = name.strip()
                        if name.startswith("--") and name not in ("--help", "--version"):
                            out.setdefault(name, (program, os.path.relpath(path, source)))
    return out


def docs_text(source: str) -> str:
    parts = []
    for pattern in DOCS:
        for path in sorted(glob.glob(os.path.join(source, pattern))):
            with open(path, encoding="utf-8", errors="replace") as fh:
                parts.append(fh.read())
    return "\n".join(parts)


def check(source: str) -> tuple[list[str], int]:
    violations: list[str] = []
    flags = declared(source)
    for program, patterns in sorted(PROGRAMS.items()):
        if not any(glob.glob(os.path.join(source, p)) for p in patterns):
            violations.append(f"{patterns[0]}: missing: {program}'s flags are declared elsewhere now "
                              "(update PROGRAMS in tests/docs/check_flags_docs.py)")
    text = docs_text(source)
    for name, (program, where) in sorted(flags.items()):
        if not re.search(re.escape(name) + r"(?![A-Za-z0-9-])", text):
            violations.append(f"{where}: undocumented: {program} {name} is in --help but named in no "
                              "README.md or docs/*.md")
    return violations, len(flags)


def self_test() -> int:
    good = {
        "sidecar/main.cc": 'app.add_option("-c,--config", f, "file");\n'
                           'app.add_option(\n    "--max-connections", n, "bound");\n'
                           'app.add_flag("--accept-wal-damage", b, "drop");\n',
        "workers/main.cc": 'app.add_option("--group", g, "group");\n',
        "tools/cli/main.cc": 'app.add_option("--endpoint", e, "where");\n',
        "tools/cli/commands_x.cc": 'sub->add_option_function<uint64_t>("--from-lsn", f, "first");\n',
        "tools/demo/demo.cc": 'app.add_flag("--with-workers", w, "also");\n',
        "tools/kafka-mock/main.cc": 'app.add_option("--brokers", b, "how many");\n',
        "bench/loadgen/loadgen.cc": 'app.add_option("--seconds", s, "run");\n',
        "README.md": "`--config`, `--group`, `--endpoint`\n",
        "tools/README.md": "`--with-workers`\n",
        "tools/kafka-mock/README.md": "`--brokers N`\n",
        "docs/operations.md": "`--max-connections`, `--accept-wal-damage`, `--from-lsn`, `--seconds`\n",
    }
    cases = [
        ("consistent", {}, None),
        ("a sidecar flag no doc names",
         {"sidecar/main.cc": good["sidecar/main.cc"] + 'app.add_option("--queue-depth", q, "q");\n'},
         "undocumented: sidetable --queue-depth"),
        ("named only as the prefix of a longer flag",
         {"docs/operations.md": "`--max-connections-x`, `--accept-wal-damage`, `--from-lsn`, `--seconds`\n"},
         "undocumented: sidetable --max-connections "),
        ("a CLI subcommand's flag",
         {"tools/cli/commands_x.cc": 'sub->add_option("--pk-start", p, "start");\n'},
         "undocumented: sidetable-cli --pk-start"),
        ("the demo's flag left out of tools/README.md", {"tools/README.md": "nothing\n"},
         "undocumented: sidetable-demo --with-workers"),
        ("the mock's flag left out of its README", {"tools/kafka-mock/README.md": "nothing\n"},
         "undocumented: sidetable-kafka-mock --brokers"),
        ("a program's sources moved", {"workers/main.cc": None}, "missing: sidetable-worker"),
    ]
    return doc_check.run_self_test(check, good, cases)


def main() -> int:
    return doc_check.main(__doc__.splitlines()[0], check, self_test,
                          "flags docs: {n} flags declared, each named in the docs")


if __name__ == "__main__":
    sys.exit(main())
