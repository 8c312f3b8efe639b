#!/usr/bin/env python3
"""Python PyTorch reference for bench/side_by_side.sh (issue 7).

Plain torch, eager or torch.compile, with the same shapes, precision and
measurement rule as gpubench: warm-up, then windows of iterations timed with
CUDA events until a minimum time has passed and the last 3 windows' throughput
varies by less than 2% (or a maximum time runs out). --repeat N measures N
times in the process (gpubench's --trials). Prints one JSON line:
{"case": ..., "samples_per_s": ..., "tflops": ..., "gb_per_s": ..., "step_ms": ...,
 "repeats": [samples/s of each], "cv": stdev/mean of the repeats}.
--profile FILE then records 5 more steps with torch.profiler (Chrome trace).

The models are gpubench's own Python twins (worker/python/gpubench_models,
the same networks and parameter counts as the C++ engine's, e.g. ResNet-50 as
torchvision's: 25,557,032 parameters at 1000 classes), at gpubench's default
parameters; --compile-mode picks torch.compile's mode.
"""
import argparse
import json
import statistics
import time

import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "worker", "python"))
from gpubench_models import defaults, models  # noqa: E402


# ---- the measurement rule ----
def measure(step, samples_per_step, warmup=10, window=10, min_time_s=2.0, max_time_s=20.0,
            cv=0.02):
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    windows, total_ms, total_steps = [], 0.0, 0
    begin = time.perf_counter()
    while True:
        start.record()
        for _ in range(window):
            step()
        end.record()
        end.synchronize()
        ms = start.elapsed_time(end)
        total_ms += ms
        total_steps += window
        windows.append(window * samples_per_step / (ms / 1e3))
        elapsed = time.perf_counter() - begin
        if len(windows) >= 3:
            last = windows[-3:]
            stable = statistics.pstdev(last) / statistics.mean(last) < cv
        else:
            stable = False
        if (elapsed >= min_time_s and stable) or elapsed >= max_time_s:
            break
    return total_steps * samples_per_step / (total_ms / 1e3), total_ms / total_steps


def measure_repeated(step, samples_per_step, args):
    """The measurement rule args.repeat times; the mean and the spread."""
    rates, steps_ms = [], []
    for _ in range(args.repeat):
        rate, step_ms = measure(step, samples_per_step, min_time_s=args.min_time,
                                max_time_s=args.max_time)
        rates.append(rate)
        steps_ms.append(step_ms)
    mean = statistics.mean(rates)
    cv = statistics.stdev(rates) / mean if len(rates) > 1 else 0.0
    if args.profile:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                step()
            torch.cuda.synchronize()
        prof.export_chrome_trace(args.profile)
    return mean, statistics.mean(steps_ms), {"repeats": rates, "cv": cv}


def run_case(args):
    dev = torch.device("cuda")
    torch.backends.cudnn.benchmark = True
    # fp32 means fp32, as in gpubench; fp32_default is PyTorch's default,
    # which lets cuDNN use TF32 in convolutions but not cuBLAS in matmuls.
    torch.backends.cudnn.allow_tf32 = args.precision in ("tf32", "fp32_default")
    torch.backends.cuda.matmul.allow_tf32 = args.precision == "tf32"
    out = {"case": args.case}
    if args.workload == "empty":
        # The loop and its CUDA events alone: this harness's cost per iteration.
        rate, step_ms, spread = measure_repeated(lambda: None, 1, args)
        out.update(samples_per_s=rate, step_ms=step_ms, us_per_iter=1e6 / rate, **spread)
        return out
    if args.workload == "matmul":
        n = args.size
        a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
        b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
        rate, step_ms, spread = measure_repeated(lambda: a @ b, 1, args)
        out.update(samples_per_s=rate, step_ms=step_ms, tflops=2 * n ** 3 * rate / 1e12, **spread)
        return out
    if args.workload == "copy":
        src = torch.empty(args.size, dtype=torch.uint8).pin_memory()
        dst = torch.empty(args.size, dtype=torch.uint8, device=dev)
        rate, step_ms, spread = measure_repeated(lambda: dst.copy_(src, non_blocking=True), 1, args)
        out.update(samples_per_s=rate, step_ms=step_ms, gb_per_s=args.size * rate / 1e9, **spread)
        return out
    p = defaults.params(args.workload)
    model = models.create(args.workload, p).to(dev)
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    shape, tokens = models.sample_shape(args.workload, p)
    if tokens:
        x = torch.randint(0, p["vocab_size"], (args.batch, *shape), device=dev)
    else:
        x = torch.randn(args.batch, *shape, device=dev)
        if x.dim() == 4:
            x = x.to(memory_format=fmt)
    if args.workload == "unet":
        y = torch.randint(0, p["num_classes"], (args.batch, *shape[1:]), device=dev)
    elif args.workload == "transformer" and p["decoder"]:
        y = torch.randint(0, p["vocab_size"], (args.batch, *shape), device=dev)
    else:
        y = torch.randint(0, p["num_classes"], (args.batch,), device=dev)
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(args.precision)
    if args.mode == "infer":
        model.eval()
        fwd = torch.compile(model, mode=args.compile_mode) if args.compile else model

        def step():
            with torch.inference_mode(), torch.autocast("cuda", dtype=dtype,
                                                        enabled=dtype is not None):
                fwd(x)
    else:
        model.train()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        scaler = torch.amp.GradScaler("cuda", enabled=dtype == torch.float16)
        fwd = torch.compile(model, mode=args.compile_mode) if args.compile else model

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
                loss = F.cross_entropy(fwd(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
    rate, step_ms, spread = measure_repeated(step, args.batch, args)
    out.update(samples_per_s=rate, step_ms=step_ms, **spread)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--case", required=True)
    p.add_argument("--workload", required=True,
                   choices=list(models.MODEL_WORKLOADS) + ["matmul", "copy", "empty"])
    p.add_argument("--mode", default="infer", choices=["infer", "train"])
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--precision", default="fp32",
                   choices=["fp32", "fp32_default", "tf32", "fp16", "bf16"])
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--compile", action="store_true")
    p.add_argument("--compile-mode", default="default",
                   choices=["default", "reduce-overhead", "max-autotune"])
    p.add_argument("--size", type=int, default=8192)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--min-time", type=float, default=2.0, help="seconds per measurement")
    p.add_argument("--max-time", type=float, default=20.0, help="seconds per measurement")
    p.add_argument("--profile", help="write a torch.profiler Chrome trace of 5 steps here")
    print(json.dumps(run_case(p.parse_args())), flush=True)


if __name__ == "__main__":
    main()
