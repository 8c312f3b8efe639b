#!/usr/bin/env python3
"""Can a language model's training step be compiled ahead of time with torch 2.11?

The experiment behind issue 32's "compiled training": the twin's (worker/python/
gpubench_models/lm.py) forward, loss and backward traced as one joint graph by
AOTAutograd (torch._functorch.aot_autograd.aot_export_joint_simple over
torch.func.functional_call, under bf16 autocast as the eager twin trains), compiled by
AOTInductor into a package whose one model takes (parameters..., tokens, labels, the
loss's tangent 1.0) and returns (loss, each parameter's gradient), and run from its
loader, the optimizer (AdamW, fused) applied outside it, as a C++ harness would. Checks
the package's loss and gradients against eager autograd on the first step, then times
steps between CUDA events (the reference's rule: --warmup steps, then steps until
--min-time seconds, at most --max-time). One JSON line: compile_s, max_rel_grad_diff,
tokens_per_s, mfu (989.4 TFLOP/s bf16 on H100/H200), first and last loss.

  python3 bench/reference/lm_joint_aot.py --size 124m --batch 16 --seq 1024
"""
import argparse
import faulthandler
import json
import os
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "worker", "python"))
from gpubench_models import lm  # noqa: E402


def joint_package(model, names, example, path):
    """The training step's joint graph as an AOTInductor package at path."""
    from torch._functorch.aot_autograd import aot_export_joint_simple
    from torch._inductor.package import package_aoti

    def loss_fn(*args):
        params = dict(zip(names, args[:len(names)]))
        x, y = args[len(names):]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = torch.func.functional_call(model, params, (x,))
        return (F.cross_entropy(logits.float().view(-1, logits.shape[-1]), y.view(-1)),)

    gm = aot_export_joint_simple(loss_fn, example, trace_joint=True)
    # The loader runs flat inputs: drop the traced pytree spec.
    gm.graph._codegen = torch.fx.graph.CodeGen()
    gm.recompile()
    for attr in ("_in_spec", "_out_spec"):
        if hasattr(gm, attr):
            delattr(gm, attr)
    flat = tuple(a.detach() for a in example) + (torch.ones((), device=example[0].device),)
    files = torch._inductor.aot_compile(gm, flat, options={"aot_inductor.package": True})
    package_aoti(path, {"model": files})
    return loss_fn


def say(what):
    """Progress on stderr, so that a crash shows its stage."""
    sys.stderr.write("lm_joint_aot: %s\n" % what)
    sys.stderr.flush()


def main():
    faulthandler.enable()
    p = argparse.ArgumentParser()
    p.add_argument("--size", default="124m")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--min-time", type=float, default=5)
    p.add_argument("--max-time", type=float, default=20)
    a = p.parse_args()
    dev = torch.device("cuda")
    layers, width, heads = lm.GPT_SIZES[a.size]
    c = lm.Config("gpt", layers, width, heads, heads, 4 * width, lm.GPT_VOCAB, a.seq)
    model = lm.build(c, dev, 0)
    params = [w for w in model.parameters()]
    names = [n for n, _ in model.named_parameters()]
    x = torch.randint(c.vocab, (a.batch, a.seq), device=dev)
    y = (x + 1) % c.vocab
    start = time.time()
    path = os.path.join(tempfile.mkdtemp(), "train.pt2")
    say("exporting and compiling the joint graph")
    loss_fn = joint_package(model, names, params + [x, y], path)
    compile_s = time.time() - start
    say("compiled in %.1f s; loading" % compile_s)
    from torch._inductor.package import load_package
    loader = load_package(path, "model").loader
    one = torch.ones((), device=dev)

    # The package's first step against eager autograd on the same weights.
    say("first step against eager autograd")
    with torch.no_grad():
        got = loader.run([w.detach() for w in params] + [x, y, one])
    ref_loss = loss_fn(*params, x, y)[0]
    ref = torch.autograd.grad(ref_loss, params)
    diff = max(((g - r).abs().max() / r.abs().max().clamp_min(1e-12)).item()
               for g, r in zip(got[1:], ref))
    opt = torch.optim.AdamW(params, lr=3e-4, fused=True)

    say("max relative gradient difference %.3g; timing" % diff)
    detached = [w.detach() for w in params]  # the same storage, which the optimizer updates

    def step():
        with torch.no_grad():
            outs = loader.run(detached + [x, y, one])
        for w, g in zip(params, outs[1:]):
            w.grad = g
        opt.step()
        return outs[0]

    first = step().item()
    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    steps, t0 = 0, time.time()
    begin.record()
    while True:
        loss = step()
        steps += 1
        if steps % 10 == 0:
            torch.cuda.synchronize()
            spent = time.time() - t0
            if spent >= a.min_time or spent >= a.max_time:
                break
    end.record()
    torch.cuda.synchronize()
    seconds = begin.elapsed_time(end) / 1e3
    tokens_per_s = a.batch * a.seq * steps / seconds
    n = sum(w.numel() for w in params) - model.position_parameters()
    flops_per_token = 6 * n + 12 * c.layers * a.seq * c.width
    name = torch.cuda.get_device_name(dev)
    peak = 989.4e12 if ("H100" in name or "H200" in name) else None
    print(json.dumps({"case": "train_joint_aot", "size": a.size, "batch": a.batch, "seq": a.seq,
                      "device": name, "torch": torch.__version__, "compile_s": compile_s,
                      "max_rel_grad_diff": diff, "steps": steps, "tokens_per_s": tokens_per_s,
                      "mfu": flops_per_token * tokens_per_s / peak if peak else None,
                      "first_loss": first, "last_loss": loss.item(),
                      "peak_allocated_bytes": torch.cuda.max_memory_allocated(dev)}))


if __name__ == "__main__":
    main()
