#!/usr/bin/env python3
"""Apache Otava's change points of each series in a JSON file.

Input: {"window": 50, "max_p": 0.001, "series": [[...], ...]}.
Output (stdout): a JSON list, per series the indices Otava's
compute_change_points (apache-otava 0.8.0, the Hunter algorithm) finds.
The peer of common/change_points.cc (tests/common/change_points_test.cc).
"""
import json
import sys

from otava.analysis import compute_change_points


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    out = []
    for series in spec["series"]:
        points, _ = compute_change_points(
            series, window_len=spec["window"], max_pvalue=spec["max_p"], min_magnitude=0.0)
        out.append([int(p.index) for p in points])
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
