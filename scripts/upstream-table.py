#!/usr/bin/env python3
"""The table of scripts/upstream-tests: each upstream test, its verdict, cycles and time.

Reads nextest's JUnit file (pass or fail, time, the failure's message), each test's report
directory (report.json: verdict, cycles, the summary line) and the test sources (every test
function, so that a test compiled out or not run is listed, not lost). Prints Markdown.
"""
import argparse
import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def tests_in_sources(tests_dir):
    """(binary, test) for every #[leakcheck::test] function, with the feature it needs, if any."""
    found = []
    for f in sorted(Path(tests_dir).glob("*.rs")):
        lines = f.read_text().splitlines()
        for i, line in enumerate(lines):
            if line.strip() != "#[leakcheck::test]":
                continue
            feature = None
            for j in range(i + 1, min(i + 6, len(lines))):
                if lines[j].strip().startswith("#[ignore"):
                    feature = "#[ignore]"
                if lines[j].strip().startswith("#[should_panic"):
                    feature = "#[should_panic]"
                m = re.search(r'cfg\(feature\s*=\s*"([^"]+)"\)', lines[j])
                if m:
                    feature = m.group(1)
                m = re.search(r"\bfn\s+([a-z0-9_]+)\s*\(", lines[j])
                if m:
                    found.append((f.stem, m.group(1), feature))
                    break
            # A cfg above the attribute applies too.
            for j in range(max(0, i - 3), i):
                m = re.search(r'cfg\(feature\s*=\s*"([^"]+)"\)', lines[j])
                if m and found and found[-1][1]:
                    found[-1] = (found[-1][0], found[-1][1], m.group(1))
    return found


def junit_cases(path):
    cases = {}
    if not Path(path).is_file():
        return cases
    for suite in ET.parse(path).getroot().iter("testsuite"):
        binary = suite.get("name", "").split("::")[-1]
        for case in suite.iter("testcase"):
            failure = case.find("failure")
            if failure is None:
                failure = case.find("error")
            message = None
            if failure is not None:
                text = (failure.text or "") + "\n" + (failure.get("message") or "")
                out = case.find("system-out")
                err = case.find("system-err")
                text += "\n" + ((out.text or "") if out is not None else "") + "\n" + ((err.text or "") if err is not None else "")
                message = text
            cases[(binary, case.get("name"))] = (float(case.get("time", "0")), message)
    return cases


def first_words(text, name):
    """What failed, in one line: leakcheck's summary, or the test's own panic."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("leakcheck: ") or line.startswith("leakcheck::test"):
            return line
    for line in text.splitlines():
        if "panicked at" in line:
            idx = text.splitlines().index(line)
            rest = text.splitlines()[idx + 1 : idx + 2]
            return (line.strip() + " " + " ".join(r.strip() for r in rest)).strip()
    return next((l.strip() for l in text.splitlines() if l.strip()), "failed")


def cell(text, limit=220):
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--junit", required=True)
    p.add_argument("--plain-junit", required=True)
    p.add_argument("--reports", required=True)
    p.add_argument("--tests", required=True)
    p.add_argument("--skipped", default="")
    p.add_argument("--version", required=True)
    a = p.parse_args()
    skipped = {tuple(s.split(":", 1)) for s in a.skipped.split()}
    cases = junit_cases(a.junit)
    plain = junit_cases(a.plain_junit)
    rows, counts = [], {}
    for binary, test, feature in tests_in_sources(a.tests):
        report = Path(a.reports) / f"{binary}-{test}" / "report.json"
        r = json.loads(report.read_text()) if report.is_file() else None
        published = "-"
        if (binary, test) in plain:
            published = "passes" if plain[(binary, test)][1] is None else "fails"
        if (binary, test) in skipped:
            verdict, cycles, secs, note = "not run", "-", "-", "a compile-fail test (trybuild): no run to repeat"
        elif (binary, test) not in cases:
            if feature == "#[ignore]":
                verdict, cycles, secs, note = "ignored as published", "-", "-", "#[ignore] upstream: not run by default"
            else:
                need = f"feature `{feature}`" if feature else "a cfg this build does not meet"
                verdict, cycles, secs, note = "compiled out", "-", "-", f"needs {need}, not built"
        else:
            secs_f, message = cases[(binary, test)]
            secs = f"{secs_f:.2f}"
            cycles = str(r["cycles_run"]) if r else "-"
            if feature == "#[should_panic]":
                verdict = "skipped: panics by design"
                note = "#[should_panic]: its body panics in the first cycle (" + ("as expected" if message is None else "not as expected") + "), so no cycle is judged"
            elif published == "fails":
                verdict = "skipped: fails as published"
                note = "in this build, without the attribute: " + first_words(plain[(binary, test)][1], test)
            elif message is None:
                verdict = r["verdict"] if r else "passed, not judged"
                note = r["summary"] if r else "a #[should_panic] test: its body panics in the first cycle, so no cycle is judged"
            else:
                words = first_words(message, test)
                if words.startswith("leakcheck: ") and r:
                    verdict = r["verdict"]
                elif words.startswith("leakcheck::test"):
                    verdict = "error"
                else:
                    verdict = "failed on its own"
                note = words
        counts[verdict] = counts.get(verdict, 0) + 1
        rows.append(f"| {binary}::{test} | {published} | {verdict} | {cycles} | {secs} | {cell(note)} |")
    print(f"rust-rocksdb {a.version}'s tests with `#[leakcheck::test]` (scripts/upstream-tests): "
          + ", ".join(f"{v} {n}" for v, n in sorted(counts.items())) + f"; {len(rows)} tests.\n")
    print("| test | as published | verdict | cycles | time (s) | summary or why |")
    print("| --- | --- | --- | --- | --- | --- |")
    print("\n".join(rows))


if __name__ == "__main__":
    sys.exit(main())
