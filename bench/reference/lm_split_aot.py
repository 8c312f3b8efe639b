#!/usr/bin/env python3
"""Issue 49's second route to compiled training: the forward and the backward as two
AOTInductor models, as torch.compile partitions them.

The joint route (lm_joint_aot.py: one package of forward, loss and backward) crashed in
torch 2.11's loader on CUDA (bench/results/2026-11-26-h100-train-joint-aot.txt). Here
AOTAutograd (functorch.compile.aot_function over torch.func.functional_call, the
min-cut partitioner torch.compile uses) splits the twin's (worker/python/gpubench_models/
lm.py) training step into a forward graph, (parameters..., tokens, labels) -> (loss, the
activations it saves...), and a backward graph, (saved..., the loss's tangent) ->
(each parameter's gradient...). Each is compiled by AOTInductor, both go in one package
("forward", "backward"), and each runs from its loader with flat inputs as a C++ harness
would; the optimizer (AdamW, fused where the device has it) is applied outside. The
compiled step trains --steps steps beside eager autograd from the same weights on the
same batches, and each step's loss must agree (relative 1e-4 in fp32, 2e-2 under bf16
autocast). On CUDA it then times steps between CUDA events (--warmup, then until
--min-time seconds). One JSON line: compile_s, worst_rel_loss_diff, ok, first and last
loss, and on CUDA tokens_per_s.

  python3 bench/reference/lm_split_aot.py --device cpu            (tiny: 2 layers, width 64)
  python3 bench/reference/lm_split_aot.py --device cuda --size 124m --batch 16 --seq 1024 \\
      --precision bf16
"""
import argparse
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


def config_of(a):
    if a.size == "tiny":
        if a.model == "gpt":
            return lm.Config("gpt", 2, 64, 4, 4, 256, 100, a.seq)
        return lm.Config("llama", 2, 64, 4, 2, 96, 100, a.seq)
    if a.model == "gpt":
        layers, width, heads = lm.GPT_SIZES[a.size]
        return lm.Config("gpt", layers, width, heads, heads, 4 * width, lm.GPT_VOCAB, a.seq)
    layers, width, heads, kv_heads, ffn, vocab = lm.LLAMA_SIZES[a.size]
    return lm.Config("llama", layers, width, heads, kv_heads, ffn, vocab, a.seq)


def split_package(model, names, example, dtype, path):
    """The training step's forward and backward graphs, one package of two models at path;
    the loss function they were traced from."""
    from functorch.compile import aot_function
    from torch._functorch.partitioners import min_cut_rematerialization_partition
    from torch._inductor.package import package_aoti

    device_type = example[0].device.type

    def loss_fn(*args):
        params = dict(zip(names, args[:len(names)]))
        x, y = args[len(names):]
        with torch.autocast(device_type, dtype=dtype, enabled=dtype != torch.float32):
            logits = torch.func.functional_call(model, params, (x,))
        return (F.cross_entropy(logits.float().view(-1, logits.shape[-1]), y.view(-1)),)

    graphs = {}

    def keep(name):
        def compiler(gm, inputs):
            graphs[name] = (gm, inputs)
            return gm.forward
        return compiler

    traced = aot_function(loss_fn, fw_compiler=keep("forward"), bw_compiler=keep("backward"),
                          partition_fn=min_cut_rematerialization_partition)
    traced(*example)[0].backward()
    files = {}
    for name, (gm, inputs) in graphs.items():
        flat = [t.detach() if isinstance(t, torch.Tensor) else t for t in inputs]
        files[name] = torch._inductor.aot_compile(
            gm, flat, options={"aot_inductor.package": True,
                               "aot_inductor.model_name_for_generated_files": name})
    package_aoti(path, files)
    return loss_fn


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="gpt", choices=("gpt", "llama"))
    p.add_argument("--size", default="tiny")
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seq", type=int, default=16)
    p.add_argument("--precision", default="fp32", choices=("fp32", "bf16"))
    p.add_argument("--device", default="cpu")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--min-time", type=float, default=5)
    a = p.parse_args()
    dev = torch.device(a.device)
    dtype = torch.bfloat16 if a.precision == "bf16" else torch.float32
    c = config_of(a)
    compiled = lm.build(c, dev, 0)
    eager = lm.build(c, dev, 0)  # the same weights
    # The parameters, then the buffers (llama's rotary tables): inputs of the forward.
    names = [n for n, _ in compiled.named_parameters()]
    params = list(compiled.parameters())
    buffers = list(compiled.buffers())
    names += [n for n, _ in compiled.named_buffers()]
    torch.manual_seed(1)
    batches = [torch.randint(c.vocab, (a.batch, a.seq), device=dev) for _ in range(a.steps)]
    start = time.time()
    path = os.path.join(tempfile.mkdtemp(), "train.pt2")
    loss_fn = split_package(compiled, names,
                            params + buffers + [batches[0], (batches[0] + 1) % c.vocab], dtype,
                            path)
    compile_s = time.time() - start
    from torch._inductor.package import load_package
    forward = load_package(path, "forward").loader
    backward = load_package(path, "backward").loader
    fused = True  # CUDA's and (2.4 on) the CPU's
    opt = torch.optim.AdamW(params, lr=1e-3, fused=fused)
    eager_opt = torch.optim.AdamW(eager.parameters(), lr=1e-3, fused=fused)
    # The storage the optimizer updates, and the buffers.
    weights = [w.detach() for w in params] + buffers
    one = torch.ones((), device=dev)

    def step(x):
        with torch.no_grad():
            outs = forward.run(weights + [x, (x + 1) % c.vocab])
            grads = backward.run(list(outs[1:]) + [one])
        for w, g in zip(params, grads[:len(params)]):
            w.grad = g
        opt.step()
        return outs[0]

    worst, losses = 0.0, []
    eager_inputs = list(eager.parameters()) + list(eager.buffers())
    for x in batches:
        eager_opt.zero_grad()
        want = loss_fn(*eager_inputs, x, (x + 1) % c.vocab)[0]
        want.backward()
        eager_opt.step()
        got = step(x).item()
        losses.append(got)
        worst = max(worst, abs(got - want.item()) / abs(want.item()))
    tolerance = 1e-4 if dtype == torch.float32 else 2e-2
    out = {"case": "train_split_aot", "model": a.model, "size": a.size, "batch": a.batch,
           "seq": a.seq, "precision": a.precision, "device": str(dev),
           "torch": torch.__version__, "compile_s": compile_s, "steps_checked": a.steps,
           "worst_rel_loss_diff": worst, "ok": worst <= tolerance,
           "first_loss": losses[0], "last_loss": losses[-1]}
    if dev.type == "cuda":
        x = batches[0]
        for _ in range(a.warmup):
            step(x)
        torch.cuda.synchronize()
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        steps, t0 = 0, time.time()
        begin.record()
        while steps < 10 or time.time() - t0 < a.min_time:
            step(x)
            steps += 1
        end.record()
        torch.cuda.synchronize()
        out["tokens_per_s"] = a.batch * a.seq * steps / (begin.elapsed_time(end) / 1e3)
        out["device"] = torch.cuda.get_device_name(dev)
    print(json.dumps(out))
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
