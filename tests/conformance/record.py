"""Record the real kube-apiserver's answers to the corpus as the golden files (or --check them).

    python -m tests.conformance.record            # rewrite tests/conformance/golden/*.json
    python -m tests.conformance.record --check    # exit 1 when the real server answers otherwise

Needs etcd and kube-apiserver (`python3 tools/build.py kube`). The sim side of the suite reads
the golden files, so it runs in the fast tier without the binaries.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tests.conformance.compare import diff, generate_name_prefixes, normalise
from tests.conformance.runner import Sequence, Target, load_corpus, play_all, request_count

GOLDEN = Path(__file__).parent / "golden"
SERVER = "kube-apiserver v1.37.2 (etcd 3.7.0), envtest shape"


def answers_of(target: Target, sequences: list[Sequence]) -> dict[str, dict[str, Any]]:
    """corpus file -> sequence id -> normalised answers."""
    out: dict[str, dict[str, Any]] = {}
    for sequence, answers in play_all(target, sequences):
        prefixes = generate_name_prefixes(sequence.steps)
        out.setdefault(sequence.file, {})[sequence.id] = [normalise(a, prefixes) for a in answers]
    return out


def load_golden() -> dict[str, dict[str, Any]]:
    return {path.stem: json.loads(path.read_text())["sequences"]
            for path in sorted(GOLDEN.glob("*.json"))}


def write_golden(recorded: dict[str, dict[str, Any]]) -> None:
    GOLDEN.mkdir(exist_ok=True)
    for old in GOLDEN.glob("*.json"):
        if old.stem not in recorded:
            old.unlink()
    for stem, sequences in recorded.items():
        document = {"server": SERVER, "sequences": sequences}
        (GOLDEN / f"{stem}.json").write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")


def drift(recorded: dict[str, dict[str, Any]], golden: dict[str, dict[str, Any]]) -> list[str]:
    """Where a fresh recording differs from the checked-in one."""
    problems = []
    for stem in sorted(set(recorded) | set(golden)):
        fresh, kept = recorded.get(stem) or {}, golden.get(stem) or {}
        one_side = sorted(set(fresh) ^ set(kept))
        problems += [f"{stem}/{m}: recorded on one side only" for m in one_side]
        for seq_id in sorted(set(fresh) & set(kept)):
            if len(fresh[seq_id]) != len(kept[seq_id]):
                problems.append(f"{stem}/{seq_id}: {len(kept[seq_id])} steps recorded, "
                                f"{len(fresh[seq_id])} now")
                continue
            for step, (want, got) in enumerate(zip(kept[seq_id], fresh[seq_id], strict=True)):
                problems += [f"{stem}/{seq_id} step {step} {path}: {a!r} -> {b!r}"
                             for path, a, b in diff(want, got)]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    from tests.conformance.servers import real_target

    sequences = load_corpus()
    with real_target() as target:
        recorded = answers_of(target, sequences)
    if args.check:
        problems = drift(recorded, load_golden())
        print("\n".join(problems) or "golden answers are current")
        return 1 if problems else 0
    write_golden(recorded)
    print(f"recorded {request_count(sequences)} requests in {len(sequences)} sequences")
    return 0


if __name__ == "__main__":
    sys.exit(main())
