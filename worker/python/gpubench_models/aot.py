"""Compiles a built-in workload with AOTInductor for gpubench-worker.

  python3 -m gpubench_models.aot --workload resnet50 --batch 256 --precision fp16 \
      --channels-last 1 --device cuda --out PACKAGE.pt2 [--image-size 224 ...]
  python3 -m gpubench_models.aot --count-only --workload resnet50 [params]

torch.export traces the Python twin of the workload (models.py) in eval mode
for one fixed batch, then torch._inductor.aoti_compile_and_package writes a
.pt2 package that the C++ AOTIModelPackageLoader runs. The package takes the
same input the eager run feeds (float32 images or frames, int64 tokens, in
channels_last where asked) and returns float32: fp16 and bf16 cast the input
inside the compiled graph and run the weights in that dtype, as a deployed
half-precision model does; tf32 allows TF32 in matmuls and convolutions.
The language models (gpt, llama) compile two models into one package,
"prefill" and "step", or for serving "prefill_slots" and "rows" (lm_aot.py). Writes the package to a temporary file beside --out and renames it, so a
reader never sees half a package. Prints one JSON line:
{"package": PATH, "compile_s": S, "parameters": N, "torch": VERSION}.
Exit 2 for a workload or setting that cannot be compiled, 3 for a Python
without a usable torch, with the reason on stderr in a line that starts with
"gpubench_models.aot: " (the worker reports that line).
"""
import argparse
import json
import os
import sys
import tempfile
import time


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workload", required=True)
    p.add_argument("--model-size", default="small")
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--num-classes", type=int, default=10)
    p.add_argument("--sequence-length", type=int, default=128)
    p.add_argument("--num-layers", type=int, default=4)
    p.add_argument("--hidden-size", type=int, default=512)
    p.add_argument("--num-heads", type=int, default=8)
    p.add_argument("--decoder", type=int, default=0)
    p.add_argument("--vocab-size", type=int, default=1000)
    # The language models (gpt, llama): their other shapes, and the generation the
    # package is compiled for (the cache holds prompt + new tokens).
    p.add_argument("--num-kv-heads", type=int, default=0)
    p.add_argument("--ffn-size", type=int, default=0)
    p.add_argument("--prompt-length", type=int, default=0)
    p.add_argument("--new-tokens", type=int, default=0)
    # A serving run's package (mode serve): its cache holds the longest prompt and output
    # (0: the generation's two models above).
    p.add_argument("--serve-input-len", type=int, default=0)
    p.add_argument("--serve-output-len", type=int, default=0)
    p.add_argument("--attention", default="auto",
                   choices=("auto", "flash", "efficient", "cudnn", "math"))
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--precision", default="fp32",
                   choices=("fp32", "tf32", "fp16", "bf16", "fp32_default"))
    p.add_argument("--channels-last", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--out")
    p.add_argument("--count-only", action="store_true",
                   help="print the parameter count and exit")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--verify", metavar="PACKAGE",
                   help="gpt, llama: check PACKAGE's generation against the twin (lm_aot.py)")
    return p.parse_args(argv)


def fail(message):
    """The reason a compile cannot be done, in the line the worker reports."""
    sys.stderr.write("gpubench_models.aot: %s\n" % message)


def params_of(a):
    return {"model_size": a.model_size, "image_size": a.image_size,
            "num_classes": a.num_classes, "sequence_length": a.sequence_length,
            "num_layers": a.num_layers, "hidden_size": a.hidden_size,
            "num_heads": a.num_heads, "decoder": a.decoder, "vocab_size": a.vocab_size}


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        import torch
    except ImportError:
        fail("%s has no torch: install the PyTorch wheel whose LibTorch gpubench-worker "
             "links (pip install torch==2.11.0)" % sys.executable)
        return 3
    if a.workload in ("gpt", "llama"):
        from . import lm_aot
        return lm_aot.main(a, fail)
    from . import models

    params = params_of(a)
    torch.manual_seed(a.seed)
    try:
        model = models.create(a.workload, params)
    except ValueError as e:
        fail(str(e))
        return 2
    count = models.parameter_count(model)
    if a.count_only:
        print(json.dumps({"parameters": count, "torch": torch.__version__}))
        return 0
    if not a.out:
        fail("--out: the package's path is required")
        return 2
    if not hasattr(torch._inductor, "aoti_compile_and_package"):
        fail("torch %s has no torch._inductor.aoti_compile_and_package (PyTorch 2.6 or "
             "newer has)" % torch.__version__)
        return 3
    device = torch.device(a.device)
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(a.precision, torch.float32)
    if a.precision == "tf32":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    elif a.precision == "fp32_default":  # PyTorch's own defaults
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = True
    elif a.precision == "fp32":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False

    class Deployed(torch.nn.Module):
        """The model in its precision, taking and returning what eager does."""

        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            if x.is_floating_point() and x.dtype != dtype:
                x = x.to(dtype)
            return self.inner(x).float()

    shape, tokens = models.sample_shape(a.workload, params)
    shape = (a.batch,) + tuple(shape)
    image = len(shape) == 4 and not tokens
    memory_format = torch.channels_last if a.channels_last and image else torch.contiguous_format
    model = model.to(device=device, dtype=dtype).eval()
    if memory_format == torch.channels_last:
        model = model.to(memory_format=memory_format)
    if tokens:
        example = torch.randint(params["vocab_size"], shape, device=device, dtype=torch.int64)
    else:
        example = torch.randn(shape, device=device).contiguous(memory_format=memory_format)
    start = time.time()
    out_dir = os.path.dirname(os.path.abspath(a.out))
    fd, tmp = tempfile.mkstemp(prefix=".compile-", suffix=".pt2", dir=out_dir)
    os.close(fd)
    try:
        with torch.no_grad():
            try:
                exported = torch.export.export(Deployed(model), (example,))
            except Exception as e:  # the reason torch gives, on one line
                fail("%s does not export (torch.export, torch %s): %s" %
                     (a.workload, torch.__version__, str(e).strip().splitlines()[0]))
                return 2
            torch._inductor.aoti_compile_and_package(exported, package_path=tmp)
        os.replace(tmp, a.out)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    print(json.dumps({"package": a.out, "compile_s": time.time() - start,
                      "parameters": count, "torch": torch.__version__}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
