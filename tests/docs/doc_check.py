"""What the checks of tests/docs/ share: a self-test that runs a check on
small made-up trees (each case changes the good tree and names the
violation it must produce), and the command line (--source or --self-test).
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from typing import Callable

Check = Callable[[str], "tuple[list[str], int]"]


def run_self_test(check: Check, good: dict[str, str],
                  cases: list[tuple[str, dict[str, str | None], str | None]]) -> int:
    """Each case: (title, files to replace (None: remove), a text one of the
    violations must contain, or None for "no violation")."""
    failures = 0
    for title, change, want in cases:
        files = dict(good)
        for k, v in change.items():
            if v is None:
                files.pop(k, None)
            else:
                files[k] = v
        root = tempfile.mkdtemp(prefix="doc-check-")
        try:
            for rel, text in files.items():
                path = os.path.join(root, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(text)
            violations, _ = check(root)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        ok = (not violations) if want is None else any(want in v for v in violations)
        if not ok:
            failures += 1
            print(f"self-test FAILED: {title}: want {want!r}, got {violations}")
    if failures:
        return 1
    print(f"self-test: {len(cases)} cases pass")
    return 0


def main(description: str, check: Check, self_test: Callable[[], int], passed: str) -> int:
    """`passed` is printed with the count check() returns ({n})."""
    parser = argparse.ArgumentParser(description=description)
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
    print(passed.format(n=n))
    return 0
