#!/usr/bin/env python3
"""The device kernels of a Kineto Chrome trace by total time, per step: what
two traces of the same model (gpubench's, PyTorch's) spend differently.
Usage: kernel_table.py TRACE.json STEPS [TOP]
Prints one line per kernel (name cut at 90 characters): ms a step, calls a
step; then the total."""
import collections
import json
import sys


def main():
    path, steps = sys.argv[1], int(sys.argv[2])
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    events = json.load(open(path))
    events = events.get("traceEvents", events) if isinstance(events, dict) else events
    total = collections.Counter()
    calls = collections.Counter()
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            name = e.get("name", "?")[:90]
            total[name] += e.get("dur", 0)
            calls[name] += 1
    for name, us in total.most_common(top):
        print(f"{us / 1e3 / steps:9.3f} ms {calls[name] / steps:7.1f}x  {name}")
    print(f"{sum(total.values()) / 1e3 / steps:9.3f} ms {sum(calls.values()) / steps:7.1f}x  all")


if __name__ == "__main__":
    main()
