"""A language model's AOTInductor package: two models in one .pt2.

  "prefill": (prompt [B, P] int64, caches) -> the last position's logits [B, V]
  "step":    (token [B, 1] int64, position [1] int64, caches) -> logits [B, V]

or, for serving (--serve-input-len and --serve-output-len: the longest prompt and output;
the cache holds their sum, a row a slot of --batch), with dynamic shapes:

  "prefill_slots": (prompts [k, P] int64, slots [k] int64, caches) -> logits [k, V],
                   k of 1 to the slots, P of 1 to the longest prompt
  "rows":          (tokens [n, 1] int64, positions [n] int64, caches) -> logits [n, V],
                   the rows 0..n-1, n of 1 to the slots (lm.py's PrefillSlots and Rows)

caches is the flat list k0, v0, k1, v1... of every layer's [B, KVH, P + N, hd] in the
weights' dtype, which both write in place (the step at position, under the static
form's mask over the whole cache), so the C++ decode loop allocates the cache once and
hands the same tensors to each call, as a CUDA graph needs. The weights are cast to the
precision (no autocast), as the eager decode holds them. --attention other than auto
exports and compiles under that SDPA backend alone; the backend SDPA dispatches to for
each model's shapes is the package's metadata ("attention_" and its name).

--verify PACKAGE (with the model arguments it was compiled for) builds the twin again
(same seed: the package's weights), generates with the package's prefill and steps from
a random prompt (serving: prompts of several lengths in their slots, then steps of all
the rows and of all but the last), and compares each token's logits with a full forward
over its sequence so far: {"max_rel_diff": D, "ok": D <= tolerance} (1e-4 in fp32, 2e-2 in fp16 and bf16),
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
                     max(a.sequence_length, a.prompt_length + a.new_tokens,
                         a.serve_input_len + a.serve_output_len))


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


def tolerance_of(dtype):
    return 1e-4 if dtype == torch.float32 else 2e-2


def relative(logits, full):
    return ((logits - full).abs().max() / full.abs().max()).item()


def verify_serve(a, c, model, dtype, device):
    """The serving package's prefill_slots and rows against the twin's full forward."""
    from torch._inductor.package import load_package
    prefill, rows = load_package(a.verify, "prefill_slots"), load_package(a.verify, "rows")
    slots, longest = a.batch, a.serve_input_len
    caches = lm.new_caches(c, slots, longest + a.serve_output_len, dtype, device)
    # Two slots a length, the longest first; each group prefilled into its own slots.
    seqs = [torch.randint(c.vocab, (1, max(1, longest - s // 2)), device=device)
            for s in range(slots)]
    worst = 0.0
    last = [None] * slots
    with torch.no_grad():
        for group in sorted({seq.shape[1] for seq in seqs}, reverse=True):
            members = [s for s in range(slots) if seqs[s].shape[1] == group]
            logits = prefill(torch.cat([seqs[s] for s in members]),
                             torch.tensor(members, device=device), caches)
            for i, s in enumerate(members):
                worst = max(worst, relative(logits[i], model(seqs[s])[0, -1]))
                last[s] = logits[i]
        for step in range(a.serve_output_len - 1):
            n = slots if step % 2 == 0 else max(1, slots - 1)
            tokens = torch.stack([last[s].argmax(-1, keepdim=True) for s in range(n)])
            positions = torch.tensor([seqs[s].shape[1] for s in range(n)], device=device)
            logits = rows(tokens, positions, caches)
            for s in range(n):
                seqs[s] = torch.cat([seqs[s], tokens[s:s + 1]], 1)
                worst = max(worst, relative(logits[s], model(seqs[s])[0, -1]))
                last[s] = logits[s]
    print(json.dumps({"max_rel_diff": worst, "ok": worst <= tolerance_of(dtype)}))
    return 0 if worst <= tolerance_of(dtype) else 1


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
            worst = max(worst, relative(logits, full))
            if i == n - 1:
                break
            token = logits.argmax(-1, keepdim=True)
            seq = torch.cat([seq, token], 1)
            logits = step(token, torch.tensor([p + i], device=device), caches)
    print(json.dumps({"max_rel_diff": worst, "ok": worst <= tolerance_of(dtype)}))
    return 0 if worst <= tolerance_of(dtype) else 1


def programs_of(a, c, dtype, device):
    """(name, module wrapper, example arguments, dynamic shapes) of each model."""
    if a.serve_input_len > 0:
        from torch.export import Dim
        slots, longest = a.batch, a.serve_input_len
        caches = lm.new_caches(c, slots, longest + a.serve_output_len, dtype, device)
        # A dimension that can be 1 is dynamic from an example of 2 (torch.export
        # specialises an example of 1).
        k = Dim("k", min=1, max=slots) if slots > 1 else None
        p = Dim("p", min=1, max=longest) if longest > 1 else None
        ek, ep = min(2, slots), min(2, longest)
        prompts = torch.randint(c.vocab, (ek, ep), device=device)
        fill = torch.arange(ek, device=device)
        tokens = torch.randint(c.vocab, (ek, 1), device=device)
        positions = torch.full((ek,), ep, device=device)
        fixed = [None] * len(caches)
        return (("prefill_slots", lm.PrefillSlots, (prompts, fill, caches),
                 ({0: k, 1: p}, {0: k}, fixed)),
                ("rows", lm.Rows, (tokens, positions, caches), ({0: k}, {0: k}, fixed)))
    b, p, n = a.batch, a.prompt_length, a.new_tokens
    caches = lm.new_caches(c, b, p + n, dtype, device)
    prompt = torch.randint(c.vocab, (b, p), device=device)
    token = torch.randint(c.vocab, (b, 1), device=device)
    position = torch.tensor([p], device=device)
    return (("prefill", lm.Prefill, (prompt, caches), None),
            ("step", lm.Step, (token, position, caches), None))


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
        return (verify_serve if a.serve_input_len > 0 else verify)(a, c, model, dtype, device)
    if not a.out:
        fail("--out: the package's path is required")
        return 2
    start = time.time()
    out_dir = os.path.dirname(os.path.abspath(a.out))
    work = tempfile.mkdtemp(prefix=".compile-", dir=out_dir)
    tmp = os.path.join(work, "package.pt2")
    try:
        with torch.no_grad(), backend_context(a.attention):
            programs = {}
            for name, wrapper, args, dynamic in programs_of(a, c, dtype, device):
                try:
                    programs[name] = torch.export.export(wrapper(model), args,
                                                         dynamic_shapes=dynamic)
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
