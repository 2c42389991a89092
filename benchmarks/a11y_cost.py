"""What the pictures' text alternatives add to a study page: the ``<desc>`` of each picture (an
XML parse of the drawn SVG, both widths) and the table "the numbers" of its tooltips (another
parse of the wide one), in CPU time (``time.process_time``, medians), and the tables' share of
the page's HTML (the page rendered through the TestClient).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/a11y_cost.py [--answers 150] [--repeats 20]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--answers", type=int, default=150)
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from fastapi.testclient import TestClient

    from boloop.study.pictures import PHONE_WIDTH, _describe, _progress_lead, pictures
    from boloop.web import create_app
    from boloop.web.app import _picture_numbers
    from study_samples import make_study

    url = f"sqlite:///{tempfile.mkdtemp()}/a11y.db"
    keys = ("safe", "lev2", "pref")
    print("study answers  added ms CPU  wide pictures KB  table rows  page KB  tables KB")
    studies = {k: make_study(k, url, answers=args.answers, fast=True) for k in keys}
    client = TestClient(create_app(url))
    for key, study in studies.items():
        wide = pictures(study, growth=False)
        narrow = pictures(study, growth=False, width=PHONE_WIDTH)

        def added(study=study, wide=wide, narrow=narrow) -> None:
            for svg in [*wide.values(), *narrow.values()]:
                _describe(svg, "")
            for _ in range(2):  # the progress picture's lead, at both widths
                _progress_lead(study)
            for svg in wide.values():
                _picture_numbers(svg)

        times = []
        for _ in range(args.repeats):
            t0 = time.process_time()
            added()
            times.append(time.process_time() - t0)
        html = client.get(f"/studies/{key}").text
        tables = sum(len(m) for m in re.findall(r'<details class="numbers".*?</details>', html, re.S))
        rows = sum(len(_picture_numbers(v)) for v in wide.values())
        print(
            f"{key:5s} {args.answers:7d} {1e3 * statistics.median(times):12.2f} "
            f"{sum(len(v) for v in wide.values()) / 1e3:17.0f} {rows:11d} "
            f"{len(html) / 1e3:8.0f} {tables / 1e3:10.1f}"
        )


if __name__ == "__main__":
    main()
