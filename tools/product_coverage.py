"""Which product lines the suite executes, and which a later tree no longer executes (issue 31).

    python tools/product_coverage.py run [--tree DIR] OUT.json [-- PYTEST ARGS]
    python tools/product_coverage.py compare BEFORE.json AFTER.json
    python tools/product_coverage.py merge OUT.json PART.json PART.json...

`run` runs the suite of the checkout at --tree (default: this one) under coverage.py with that
checkout's .venv, the pytest-xdist workers and every Python subprocess that inherits the
environment measured too (coverage's `patch = subprocess`; a process started with an environment
of its own, like a container on a real node, is not), combines the data and
writes, per file of jobset_infra/, its statements and the executed lines with their text.
`compare` prints executed statements before and after, for the product (jobset_infra/ outside
sim/) and the sim apart, and every product line executed before whose text is executed nowhere
after: "removed" when the after tree no longer has that line, "not executed" when it still does.
Lines are matched by their text, first in the file of the same path and then in any product
file (code that moved); line numbers are the before tree's. `merge` unites reports of one
commit made by separate runs (the suite without the real tiers, then only the real tiers:
`-- -q -n 2 -m "envtest or real"`): a line executed in any of them is executed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
RC = """\
[run]
source_pkgs = jobset_infra
parallel = true
patch = subprocess, _exit
sigterm = true
"""


def run(tree: Path, out: Path, pytest_args: list[str]) -> int:
    """Run the suite of `tree` under coverage; write the per-file report to `out`."""
    with tempfile.TemporaryDirectory(prefix="product-coverage-") as folder:
        rc = Path(folder) / "coveragerc"
        rc.write_text(RC)
        env = {**os.environ, "COVERAGE_FILE": str(Path(folder) / ".coverage")}
        coverage = [str(tree / ".venv/bin/coverage")]
        args = pytest_args or ["-q", "-n", "2"]
        status = subprocess.run([*coverage, "run", f"--rcfile={rc}", "-m", "pytest", *args],
                                cwd=tree, env=env, check=False).returncode
        subprocess.run([*coverage, "combine", f"--rcfile={rc}", "-q"], cwd=tree, env=env,
                       check=True)
        script = (f"import sys; sys.path.insert(0, {str(HERE / 'tools')!r}); "
                  f"import product_coverage as p; p.dump({str(tree)!r}, {str(out)!r})")
        subprocess.run([str(tree / ".venv/bin/python"), "-c", script], cwd=tree, env=env,
                       check=True)
    print(f"pytest exited {status}; report in {out}", file=sys.stderr)
    return 0


def dump(tree: str, out: str) -> None:
    """Inside the tree's venv: read the combined data (COVERAGE_FILE) into `out`."""
    import coverage  # the tree's own, as the run used

    cov = coverage.Coverage()
    cov.load()
    data = cov.get_data()
    executed = {str(Path(f).resolve()): set(data.lines(f) or ()) for f in data.measured_files()}
    files: dict[str, Any] = {}
    root = Path(tree).resolve()
    for path in sorted((root / "jobset_infra").rglob("*.py")):
        _, statements, _, _, _ = cov.analysis2(str(path))
        text = path.read_text(encoding="utf-8").splitlines()
        ran = sorted(executed.get(str(path), set()) & set(statements))
        files[path.relative_to(root).as_posix()] = {
            "statements": len(statements),
            "executed": [[n, text[n - 1].strip()] for n in ran],
            "source": sorted({line.strip() for line in text if line.strip()}),
        }
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree,
                            capture_output=True, text=True, check=False).stdout.strip()
    Path(out).write_text(json.dumps({"commit": commit, "files": files}))


def _is_sim(path: str) -> bool:
    return path.startswith("jobset_infra/sim/")


def totals(report: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """(executed, statements) for the product and the sim."""
    found = {"product": [0, 0], "sim": [0, 0]}
    for path, entry in report["files"].items():
        part = found["sim" if _is_sim(path) else "product"]
        part[0] += len(entry["executed"])
        part[1] += entry["statements"]
    return {k: (v[0], v[1]) for k, v in found.items()}


def unexecuted_after(before: dict[str, Any], after: dict[str, Any]
                     ) -> dict[str, list[tuple[int, str, str]]]:
    """Product file -> [(line, text, "removed" | "not executed")] of lines run only before."""
    product_after = {p: e for p, e in after["files"].items() if not _is_sim(p)}
    anywhere = Counter(t for e in product_after.values() for _, t in e["executed"])
    source = {t for e in product_after.values() for t in e["source"]}
    lost: dict[str, list[tuple[int, str, str]]] = {}
    for path, entry in before["files"].items():
        if _is_sim(path):
            continue
        same = Counter(t for _, t in product_after.get(path, {}).get("executed", []))
        for line, text in entry["executed"]:
            if same[text] > 0:
                same[text] -= 1
            elif anywhere[text] == 0:
                kind = "not executed" if text in source else "removed"
                lost.setdefault(path, []).append((line, text, kind))
    return lost


def compare(before_file: Path, after_file: Path) -> int:
    before, after = (json.loads(f.read_text()) for f in (before_file, after_file))
    print(f"executed statements / statements: before {before['commit']}, after {after['commit']}")
    old, new = totals(before), totals(after)
    for part in ("product", "sim"):
        print(f"  {part:8} {old[part][0]:>6} / {old[part][1]:<6} -> "
              f"{new[part][0]:>6} / {new[part][1]:<6}")
    lost = unexecuted_after(before, after)
    for kind in ("not executed", "removed"):
        rows = {p: [x for x in v if x[2] == kind] for p, v in lost.items()}
        rows = {p: v for p, v in rows.items() if v}
        print(f"\nproduct lines executed before, {kind} after: "
              f"{sum(len(v) for v in rows.values())} in {len(rows)} files")
        for path, lines in sorted(rows.items()):
            print(f"  {path}: {len(lines)}")
            for line, text, _ in lines:
                print(f"    {line}: {text}")
    return 0


def merge(out: Path, parts: list[Path]) -> int:
    """Write to `out` the union of the reports `parts` (of one commit, from separate runs)."""
    reports = [json.loads(p.read_text()) for p in parts]
    commits = {r["commit"] for r in reports}
    if len(commits) != 1:
        raise SystemExit(f"reports of different commits: {sorted(commits)}")
    files: dict[str, Any] = {}
    for report in reports:
        for path, entry in report["files"].items():
            kept = files.setdefault(path, {**entry, "executed": []})
            if kept["statements"] != entry["statements"]:
                raise SystemExit(f"{path}: {kept['statements']} statements in one report, "
                                 f"{entry['statements']} in another")
            lines = {n: t for n, t in kept["executed"]} | {n: t for n, t in entry["executed"]}
            kept["executed"] = [[n, lines[n]] for n in sorted(lines)]
    out.write_text(json.dumps({"commit": commits.pop(), "files": files}))
    print(f"merged {len(parts)} reports into {out}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    measure = sub.add_parser("run", help="run the suite of --tree under coverage")
    measure.add_argument("--tree", type=Path, default=HERE)
    measure.add_argument("out", type=Path)
    measure.add_argument("pytest_args", nargs=argparse.REMAINDER)
    both = sub.add_parser("compare", help="executed lines before and after")
    both.add_argument("before", type=Path)
    both.add_argument("after", type=Path)
    union = sub.add_parser("merge", help="unite reports of one commit from separate runs")
    union.add_argument("out", type=Path)
    union.add_argument("parts", type=Path, nargs="+")
    args = parser.parse_args(argv)
    if args.command == "merge":
        return merge(args.out, args.parts)
    if args.command == "run":
        extra = [a for a in args.pytest_args if a != "--"]
        return run(args.tree.resolve(), args.out.resolve(), extra)
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
