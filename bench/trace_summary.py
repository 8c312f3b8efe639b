#!/usr/bin/env python3
"""Where a step's time goes, from a Kineto Chrome trace of N steps.

Works on gpubench's traces (gpubench trace RUN -o FILE) and on torch.profiler's
(export_chrome_trace), so the side-by-side suite can put both in one table.
Prints one JSON line with per-step figures:
  step_ms     wall time from the first to the last event, per step
  gpu_ms      time at least one kernel or copy ran (union of intervals)
  gpu_share   gpu_ms / step_ms: well below 1 means the host holds the GPU back
  host_ops    top-level operators the host dispatched (nested ones not counted)
  host_op_ms  time inside those operators, all threads (autograd's included)
  launches    kernel launches and graph launches issued
Usage: trace_summary.py TRACE.json STEPS [LABEL]
"""
import json
import sys

LAUNCHES = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
            "cudaGraphLaunch", "cudaLaunchCooperativeKernel"}


def union_ms(intervals):
    total, end = 0.0, None
    for start, stop in sorted(intervals):
        if end is None or start > end:
            total += stop - start
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total / 1e3


def summarize(trace, steps):
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X" and "dur" in e]
    if not events:
        raise SystemExit("no complete events in the trace")
    first = min(e["ts"] for e in events)
    last = max(e["ts"] + e["dur"] for e in events)
    device = [(e["ts"], e["ts"] + e["dur"]) for e in events
              if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    # Top-level operators: not inside another operator of the same thread.
    ops, op_us = 0, 0.0
    by_thread = {}
    for e in events:
        if e.get("cat") == "cpu_op":
            by_thread.setdefault((e.get("pid"), e.get("tid")), []).append(e)
    for thread in by_thread.values():
        end = None
        for e in sorted(thread, key=lambda e: (e["ts"], -e["dur"])):
            if end is None or e["ts"] >= end:
                ops += 1
                op_us += e["dur"]
                end = e["ts"] + e["dur"]
    launches = sum(1 for e in events
                   if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("name") in LAUNCHES)
    step_ms = (last - first) / 1e3 / steps
    gpu_ms = union_ms(device) / steps
    return {"step_ms": round(step_ms, 3), "gpu_ms": round(gpu_ms, 3),
            "gpu_share": round(gpu_ms / step_ms, 3) if step_ms > 0 else 0,
            "host_ops": round(ops / steps, 1), "host_op_ms": round(op_us / 1e3 / steps, 3),
            "launches": round(launches / steps, 1)}


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    with open(sys.argv[1]) as f:
        out = summarize(json.load(f), int(sys.argv[2]))
    if len(sys.argv) > 3:
        out = {"label": sys.argv[3], **out}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
