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

ResNet-50 is torchvision's architecture (torchvision when installed, else the
same network written out below: 25,557,032 parameters at 1000 classes).
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- torchvision's ResNet-50, written out (used when torchvision is absent) ----
class Bottleneck(nn.Module):
    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return F.relu(out + identity)


class ResNet50(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        layers, inplanes = [], 64
        for planes, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
            down = nn.Sequential(nn.Conv2d(inplanes, planes * 4, 1, stride, bias=False),
                                 nn.BatchNorm2d(planes * 4))
            stage = [Bottleneck(inplanes, planes, stride, down)]
            inplanes = planes * 4
            stage += [Bottleneck(inplanes, planes) for _ in range(blocks - 1)]
            layers.append(nn.Sequential(*stage))
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(2048, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, 2, 1)
        x = self.layers(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def resnet50():
    try:
        import torchvision
        return torchvision.models.resnet50()
    except ImportError:
        return ResNet50()


class Mlp(nn.Module):
    """gpubench's mlp "small": 3x32x32 -> 10 through hidden width 10 (0.03M)."""

    def __init__(self, hidden=(10,), classes=10):
        super().__init__()
        dims = [3 * 32 * 32, *hidden]
        self.hidden = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims, dims[1:]))
        self.out = nn.Linear(dims[-1], classes)

    def forward(self, x):
        x = torch.flatten(x, 1)
        for layer in self.hidden:
            x = F.relu(layer(x))
        return self.out(x)


class DoubleConv(nn.Sequential):
    def __init__(self, cin, cout):
        super().__init__(nn.Conv2d(cin, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU(inplace=True), nn.Conv2d(cout, cout, 3, 1, 1, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    """milesial/Pytorch-UNet, bilinear=False: gpubench's unet (31.0M parameters)."""

    def __init__(self, classes=3):
        super().__init__()
        w = [64, 128, 256, 512, 1024]
        self.downs = nn.ModuleList([DoubleConv(3, w[0])] +
                                   [DoubleConv(w[i - 1], w[i]) for i in range(1, 5)])
        self.ups = nn.ModuleList(nn.ConvTranspose2d(w[i], w[i] // 2, 2, 2) for i in range(4, 0, -1))
        self.convs = nn.ModuleList(DoubleConv(w[i], w[i - 1]) for i in range(4, 0, -1))
        self.outc = nn.Conv2d(w[0], classes, 1)

    def forward(self, x):
        skips = []
        x = self.downs[0](x)
        for down in self.downs[1:]:
            skips.append(x)
            x = down(F.max_pool2d(x, 2))
        for up, conv, skip in zip(self.ups, self.convs, reversed(skips)):
            x = conv(torch.cat([skip, up(x)], 1))
        return self.outc(x)


class BiLstm(nn.Module):
    """gpubench's bilstm: embedding 128, 2-layer bidirectional LSTM 256, 3 classes."""

    def __init__(self, vocab=128, classes=3):
        super().__init__()
        self.embedding = nn.Embedding(vocab, 128)
        self.lstm = nn.LSTM(128, 256, num_layers=2, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        _, (h, _) = self.lstm(self.embedding(x))
        return self.fc(torch.cat([h[-2], h[-1]], 1))


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
    # fp32 means fp32, as in gpubench: PyTorch's default lets cuDNN use TF32.
    torch.backends.cudnn.allow_tf32 = args.precision == "tf32"
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
    build = {"resnet50": resnet50, "mlp": Mlp, "unet": UNet, "bilstm": BiLstm}[args.workload]
    model = build().to(dev)
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    if args.workload == "bilstm":
        x = torch.randint(0, 128, (args.batch, 256), device=dev)
        y = torch.randint(0, 3, (args.batch,), device=dev)
    elif args.workload == "unet":
        x = torch.randn(args.batch, 3, 128, 128, device=dev).to(memory_format=fmt)
        y = torch.randint(0, 3, (args.batch, 128, 128), device=dev)  # per-pixel classes
    else:
        side = 224 if args.workload == "resnet50" else 32
        x = torch.randn(args.batch, 3, side, side, device=dev).to(memory_format=fmt)
        y = torch.randint(0, 10, (args.batch,), device=dev)
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(args.precision)
    if args.mode == "infer":
        model.eval()
        fwd = torch.compile(model) if args.compile else model

        def step():
            with torch.inference_mode(), torch.autocast("cuda", dtype=dtype,
                                                        enabled=dtype is not None):
                fwd(x)
    else:
        model.train()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        scaler = torch.amp.GradScaler("cuda", enabled=dtype == torch.float16)

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
                loss = F.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
    rate, step_ms, spread = measure_repeated(step, args.batch, args)
    out.update(samples_per_s=rate, step_ms=step_ms, **spread)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--case", required=True)
    p.add_argument("--workload", required=True, choices=["resnet50", "mlp", "unet", "bilstm", "matmul", "copy", "empty"])
    p.add_argument("--mode", default="infer", choices=["infer", "train"])
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--precision", default="fp32", choices=["fp32", "tf32", "fp16", "bf16"])
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--compile", action="store_true")
    p.add_argument("--size", type=int, default=8192)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--min-time", type=float, default=2.0, help="seconds per measurement")
    p.add_argument("--max-time", type=float, default=20.0, help="seconds per measurement")
    p.add_argument("--profile", help="write a torch.profiler Chrome trace of 5 steps here")
    print(json.dumps(run_case(p.parse_args())), flush=True)


if __name__ == "__main__":
    main()
