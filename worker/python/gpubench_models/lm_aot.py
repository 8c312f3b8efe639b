"""A language model's AOTInductor package: two models in one .pt2.

  "prefill": (prompt [B, P] int64, caches) -> the last position's logits [B, V]
  "step":    (token [B, 1] int64, position [1] int64, caches) -> logits [B, V]

caches is the flat list k0, v0, k1, v1... of every layer's [B, KVH, P + N, hd] in the
weights' dtype, which both write in place (the step at position, under the static
form's mask over the whole cache), so the C++ decode loop allocates the cache once and
hands the same tensors to each call, as a CUDA graph needs. The weights are cast to the
precision (no autocast), as the eager decode holds them. --attention other than auto
exports and compiles under that SDPA backend alone; the backend SDPA dispatches to for
each model's shapes is the package's metadata ("attention_prefill", "attention_step").

--verify PACKAGE (with the model arguments it was compiled for) builds the twin again
(same seed: the package's weights), generates with the package's prefill and steps from
a random prompt, and compares each token's logits with a full forward over the sequence
so far: {"max_rel_diff": D, "ok": D <= tolerance} (1e-4 in fp32, 2e-2 in fp16 and bf16),
exit 0 when ok.
"""
import json
import os
import tempfile
import time

import torch

from . import lm

# The fused SDPA op each backend decomposes into (core ATen).
_BACKEND_OPS = {"_scaled_dot_product_flash_attention": "flash",
                "_scaled_dot_product_flash_attention_for_cpu": "flash",
                "_scaled_dot_product_efficient_attention": "efficient",
                "_scaled_dot_product_cudnn_attention": "cudnn"}


def config_of(a):
    """The twin's shape from the C++ run config's (sweep-filled) params."""
    if a.workload == "gpt":
        return lm.Config("gpt", a.num_layers, a.hidden_size, a.num_heads, a.num_heads,
                         4 * a.hidden_size, a.vocab_size, a.sequence_length)
    return lm.Config("llama", a.num_layers, a.hidden_size, a.num_heads, a.num_kv_heads,
                     a.ffn_size, a.vocab_size,
                     max(a.sequence_length, a.prompt_length + a.new_tokens))


def attention_of(exported):
    """Which SDPA backend the program's attention decomposes into ("math" where it is
    unfused matmuls and a softmax)."""
    graph = exported.run_decompositions().graph
    for node in graph.nodes:
        name = getattr(node.target, "__name__", str(node.target)).split(".")[0]
        if name in _BACKEND_OPS:
            return _BACKEND_OPS[name]
    return "math"


def backend_context(attention):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    if attention == "auto":
        import contextlib
        return contextlib.nullcontext()
    return sdpa_kernel({"flash": SDPBackend.FLASH_ATTENTION,
                        "efficient": SDPBackend.EFFICIENT_ATTENTION,
                        "cudnn": SDPBackend.CUDNN_ATTENTION,
                        "math": SDPBackend.MATH}[attention])


def verify(a, c, model, dtype, device):
    """The package's generation against the twin's full forward (see the docstring)."""
    from torch._inductor.package import load_package
    prefill, step = load_package(a.verify, "prefill"), load_package(a.verify, "step")
    b, p, n = a.batch, a.prompt_length, a.new_tokens
    caches = lm.new_caches(c, b, p + n, dtype, device)
    seq = torch.randint(c.vocab, (b, p), device=device)
    worst = 0.0
    with torch.no_grad():
        logits = prefill(seq, caches)
        for i in range(n):
            full = model(seq)[:, -1]
            worst = max(worst, ((logits - full).abs().max() / full.abs().max()).item())
            if i == n - 1:
                break
            token = logits.argmax(-1, keepdim=True)
            seq = torch.cat([seq, token], 1)
            logits = step(token, torch.tensor([p + i], device=device), caches)
    tolerance = 1e-4 if dtype == torch.float32 else 2e-2
    print(json.dumps({"max_rel_diff": worst, "ok": worst <= tolerance}))
    return 0 if worst <= tolerance else 1


def main(a, fail):
    c = config_of(a)
    if c.width % c.heads or c.heads % max(c.kv_heads, 1) or (c.model == "llama" and
                                                            c.head_dim % 2):
        fail("%s: hidden_size must split into num_heads (llama: an even head size), "
             "num_heads into num_kv_heads" % a.workload)
        return 2
    if not hasattr(torch._inductor, "aot_compile"):
        fail("torch %s has no AOTInductor (PyTorch 2.6 or newer has)" % torch.__version__)
        return 3
    device = torch.device(a.device)
    model = lm.build(c, device, a.seed)
    count = sum(w.numel() for w in model.parameters())
    if a.count_only:
        print(json.dumps({"parameters": count, "torch": torch.__version__}))
        return 0
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(a.precision, torch.float32)
    torch.backends.cuda.matmul.allow_tf32 = a.precision == "tf32"
    model = model.to(dtype).eval().requires_grad_(False)
    if a.verify:
        return verify(a, c, model, dtype, device)
    if not a.out:
        fail("--out: the package's path is required")
        return 2
    b, p, n = a.batch, a.prompt_length, a.new_tokens
    caches = lm.new_caches(c, b, p + n, dtype, device)
    prompt = torch.randint(c.vocab, (b, p), device=device)
    token = torch.randint(c.vocab, (b, 1), device=device)
    position = torch.tensor([p], device=device)
    start = time.time()
    out_dir = os.path.dirname(os.path.abspath(a.out))
    work = tempfile.mkdtemp(prefix=".compile-", dir=out_dir)
    tmp = os.path.join(work, "package.pt2")
    try:
        with torch.no_grad(), backend_context(a.attention):
            programs = {}
            for name, module, args in (("prefill", lm.Prefill(model), (prompt, caches)),
                                       ("step", lm.Step(model), (token, position, caches))):
                try:
                    programs[name] = torch.export.export(module, args)
                except Exception as e:  # the reason torch gives, on one line
                    fail("%s's %s does not export (torch.export, torch %s): %s" %
                         (a.workload, name, torch.__version__,
                          str(e).strip().splitlines()[0]))
                    return 2
            try:
                metadata = {"attention_" + name: attention_of(ep)
                            for name, ep in programs.items()}
            except Exception as e:  # a backend that cannot run the shapes
                fail("attention %s cannot run %s's shapes: %s" %
                     (a.attention, a.workload, str(e).strip().splitlines()[0]))
                return 2
            files = {}
            for name, ep in programs.items():
                files[name] = torch._inductor.aot_compile(
                    ep.module(), ep.example_inputs[0],
                    options={"aot_inductor.package": True,
                             "aot_inductor.metadata": metadata,
                             "aot_inductor.model_name_for_generated_files": name})
            from torch._inductor.package import package_aoti
            package_aoti(tmp, files)
        os.replace(tmp, a.out)
    finally:
        import shutil
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({"package": a.out, "compile_s": time.time() - start,
                      "parameters": count, "torch": torch.__version__}))
    return 0
