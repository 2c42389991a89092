"""What a person sees of a study, step by step, for changes to studies and pages that must not
change it: every method, on the small spaces of ``tests/study_samples.py`` (seed 3).

At each of ``--steps`` steps: ``Study.status()``, the pictures, the study page and its model
picture and status through the web app (FastAPI's TestClient), then the next query, answered by
the samples' made-up answers; at the end the live study's next query and that of a full replay
of its log. Record before a change, compare after::

    python benchmarks/study_view_traces.py record /tmp/before.json
    python benchmarks/study_view_traces.py compare /tmp/before.json

Times, temporary paths and CSRF tokens are left out of the comparison (they differ run to run).
A study a method cannot run is recorded by its error, and must keep failing the same way.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

#: the sample spaces each family's methods run on
FAMILY_SPACES = {
    "levelset": ["lev1", "lev2"],
    "expert": ["expert", "expert4"],
    "preference": ["pref"],
    "safe": ["safe"],
}


def _normal(text: str) -> str:
    text = re.sub(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?(\+00:00|Z)?", "TIME", text)
    text = re.sub(r"/tmp/[\w.-]+", "/tmp/X", text)
    text = re.sub(r'name="csrf" value="[^"]*"', "", text)
    return re.sub(r"@[^\"<&]*", "@", text)  # an undo form's answer key holds a time


def record(steps: int) -> dict[str, list[str]]:
    from fastapi.testclient import TestClient

    from boloop.algorithms import list_methods
    from boloop.study import create_study, load_study
    from boloop.study.pictures import pictures
    from boloop.web import create_app
    from study_samples import SPACES, answer_for

    out: dict[str, list[str]] = {}
    url = f"sqlite:///{Path(tempfile.mkdtemp()) / 'views.db'}"
    client = TestClient(create_app(url, poll_seconds=0))

    def dump(x: Any) -> str:
        return _normal(json.dumps(x, sort_keys=True, default=str))

    for m in list_methods():
        for sp in FAMILY_SPACES[m.family]:
            name = f"{m.id}-{sp}"
            rec = out.setdefault(name, [])
            try:
                study = create_study(name, m.id, SPACES[sp][1], storage=url, seed=3, family=m.family)
            except Exception as exc:  # noqa: BLE001 - recorded: it must fail the same way
                rec.append(f"create failed: {type(exc).__name__}: {exc}")
                continue
            try:
                for _ in range(steps):
                    rec.append(dump(study.status()))
                    rec.append(dump(pictures(study, growth=False)))
                    rec.append(_normal(client.get(f"/studies/{name}").text))
                    rec.append(_normal(client.get(f"/studies/{name}/pictures/model.svg").text))
                    rec.append(dump(client.get(f"/api/studies/{name}").json()))
                    study.refresh()
                    q = study.ask()
                    rec.append(dump(q.to_dict()))
                    a = answer_for(q)
                    if isinstance(a, dict):
                        a = {k: v for k, v in a.items() if k in q.outputs}
                    study.tell(q.id, a)
                rec.append(dump(study.ask().to_dict()))
                replayed = load_study(name, storage=url, full_replay=True)
                rec.append(dump(replayed.ask().to_dict()))
            except Exception as exc:  # noqa: BLE001 - recorded: it must fail the same way
                rec.append(f"failed: {type(exc).__name__}: {exc}")
    return out


def compare(before: dict[str, list[str]], after: dict[str, list[str]]) -> int:
    differ = 0
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        if a == b:
            continue
        differ += 1
        if a is None or b is None or len(a) != len(b):
            print(f"{name}: {len(a or [])} records before, {len(b or [])} after")
            continue
        i = next(k for k, (x, y) in enumerate(zip(a, b)) if x != y)
        print(f"{name}: record {i} differs")
        diff = difflib.unified_diff(a[i].splitlines(), b[i].splitlines(), lineterm="", n=0)
        for line in list(diff)[2:12]:
            print(f"    {line[:200]}")
    n = sum(len(v) for v in before.values())
    print(f"{len(before)} studies, {n} records: {differ} studies differ")
    return 1 if differ else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=["record", "compare"])
    ap.add_argument("path")
    ap.add_argument("--steps", type=int, default=12)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    now = record(args.steps)
    if args.action == "record":
        Path(args.path).write_text(json.dumps(now))
        print(f"recorded {len(now)} studies, {sum(len(v) for v in now.values())} records")
        return
    sys.exit(compare(json.loads(Path(args.path).read_text()), now))


if __name__ == "__main__":
    main()
