"""Compare two junit XML reports of one test suite: the original's run and pyfuse's.

    python tests/originals/compare.py NAME ORIGINAL.xml PYFUSE.xml

Prints each test's outcome on both, then "N passed, N failed" (a test fails here when it
passed on the original and does not on pyfuse); exits 1 if any did, or if the original ran
no test at all (nothing would be compared)."""
from __future__ import annotations

import sys
import xml.etree.ElementTree as ET


def outcomes(path: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        kinds = {child.tag for child in case}
        out[name] = ("failed" if kinds & {"failure", "error"} else
                     "skipped" if "skipped" in kinds else "passed")
    return out


def main(argv: list[str]) -> int:
    name, original, ours = argv
    theirs, mine = outcomes(original), outcomes(ours)
    if not theirs:
        print(f"{name}: the original ran no test", file=sys.stderr)
        return 1
    passed = failed = 0
    for test in sorted(theirs):
        o, m = theirs[test], mine.get(test, "missing")
        regress = o == "passed" and m != "passed"
        print(f"{'FAIL' if regress else 'ok  '} {test}: original {o}, pyfuse {m}")
        if o == "passed":
            failed += regress
            passed += not regress
    for test in sorted(set(mine) - set(theirs)):
        print(f"     {test}: only in pyfuse's run ({mine[test]})")
    print(f"{name} on pyfuse, of the tests that pass on the original:")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
