#!/usr/bin/env python3
"""expected.py: check a difftest JSON Lines report of an SGLang adapter's
run against adapters/sglang/expected.txt (scripts/sglang-emu runs it).

Usage: expected.py REPORT NAME SUITE EXPECTED

EXPECTED lists, one per line, `NAME SUITE CASE CLASS  # why`: the cases
of adapter NAME's run of SUITE that fail, with the failure class, and why
(the kernel's documented scope, a bug of the kernel). The report passes
when its failing cases are exactly those, each with that class, and at
least one case passed. Prints one summary line; each unexpected outcome
goes to stderr. Exit status: 0 as expected, 1 otherwise. Standard
library only.
"""

import json
import sys


def expected(path, name, suite):
    """{case: class} of the lines of path for adapter name and suite."""
    want = {}
    with open(path) as f:
        for line in f:
            w = line.split("#", 1)[0].split()
            if len(w) == 4 and w[0] == name and w[1] == suite:
                want[w[2]] = w[3]
    return want


def outcomes(path):
    """({case: class} of the failing cases, passed, not tested) of a report."""
    failed, passed, skipped = {}, 0, 0
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r.get("type") != "case":
                continue
            v = r.get("verdict")
            if v == "fail":
                failed[r["case"]] = r.get("class") or "?"
            elif v == "pass":
                passed += 1
            else:
                skipped += 1
    return failed, passed, skipped


def main(argv):
    if len(argv) != 4:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    report, name, suite, path = argv
    want = expected(path, name, suite)
    got, passed, skipped = outcomes(report)
    bad = []
    for case, cls in sorted(got.items()):
        if want.get(case) != cls:
            bad.append(f"{case} fails ({cls}), not so in {path}")
    for case, cls in sorted(want.items()):
        if case not in got:
            bad.append(f"{case} was expected to fail ({cls}) and did not: update {path}")
    if passed == 0 and not want:
        # A run with nothing passing is only right when this file says
        # which cases fail and why (every other one was declined).
        bad.append(f"no case of suite {suite} passed")
    for b in bad:
        print(f"sglang-emu: {name}: {b}", file=sys.stderr)
    if bad:
        print(f"{name}, suite {suite}: {len(bad)} unexpected outcomes")
        return 1
    print(f"{name}, suite {suite}: {passed} passed, {len(got)} failed as expected, {skipped} not tested")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
