#!/usr/bin/env python3
"""Python PyTorch reference for gpubench's language-model workloads (the twin).

Two models, random seeded weights and random tokens (nothing is downloaded):

  gpt    GPT-2 as nanoGPT writes it: wte Embedding(V, d) + wpe Embedding(context, d);
         L blocks of x + attn(ln_1(x)), x + mlp(ln_2(x)); ln_f; lm_head Linear(d, V,
         bias=False) whose weight IS wte.weight. LayerNorm(d) with bias, eps 1e-5.
         attn: c_attn Linear(d, 3d) -> [q | k | v] (each d wide, head h at columns
         h*hd..(h+1)*hd), SDPA is_causal, c_proj Linear(d, d). mlp: c_fc Linear(d, 4d),
         exact GELU, c_proj Linear(4d, d). No dropout. Init: every Linear/Embedding
         weight N(0, 0.02), biases 0, LayerNorm 1/0, every c_proj weight
         N(0, 0.02/sqrt(2L)). Sizes 124m (L12 d768 H12), 350m (L24 d1024 H16),
         774m (L36 d1280 H20), 1.3b (L24 d2048 H16); vocab 50304, context 1024.
  llama  tok_embeddings Embedding(V, d); L blocks of h = x + attention(attention_norm(x)),
         h + feed_forward(ffn_norm(h)); norm; output Linear(d, V, bias=False), untied.
         nn.RMSNorm(d, eps=1e-5), weight only. attention: wq Linear(d, H*hd), wk/wv
         Linear(d, KVH*hd), wo Linear(H*hd, d), no biases; rotary (theta 500000,
         rotate-half: x*cos + cat(-x2, x1)*sin, x1/x2 the first/second halves of each
         head's hd, cos/sin of pos * theta^(-2i/hd) for i < hd/2, repeated twice
         [f0..f(hd/2-1), f0..f(hd/2-1)]) on q and k; k/v repeated to H heads (query
         head h reads KV head h // (H/KVH)); SDPA is_causal. feed_forward:
         w2(silu(w1 x) * w3 x), no biases. Init as gpt (N(0, 0.02), wo and w2
         N(0, 0.02/sqrt(2L)), RMSNorm weight 1). Sizes 1b (Llama-3.2-1B's shape:
         L16 d2048 H32 KVH8 ffn 8192 V128256, untied here) and small (L4 d256 H4 KVH2
         ffn 768 V32000).
  --layers --width --heads --kv-heads --ffn --vocab override the size's (size becomes
  "custom"); --context sets gpt's wpe rows (llama's rotary table covers what the case needs).

Cases:
  train   B x T tokens (--batch --seq), labels (input + 1) % V, mean cross-entropy over
          all positions (on the logits as they come, fp32 inside cross_entropy),
          torch.optim.AdamW(lr=--lr, torch's other defaults: betas (0.9, 0.999), eps 1e-8,
          weight_decay 0.01, on every parameter; fused on CUDA). --precision bf16/fp16:
          fp32 weights under torch.autocast (fp16 with a GradScaler); tf32: fp32 with TF32
          matmuls; fp32: TF32 off. --compile: torch.compile(model) (default mode; the loss
          is inside the model's forward, as nanoGPT's). One measured iteration = one step
          (zero_grad, forward, loss, backward, optimizer step) between CUDA events (wall
          clock on CPU), synchronized per step. Figures: tokens_per_s = B*T / median step,
          tokens_per_s_mean = B*T / mean step, samples_per_s = B / mean step (sequences),
          flops_per_token = 6*N + 12*L*T*d (N = parameters without gpt's wpe),
          tflops = flops_per_token * tokens_per_s / 1e12, mfu = that / peak (989.4 TFLOPS
          bf16/fp16, 494.7 tf32, 66.9 fp32, when the device name has H100 or H200; else
          null), first_loss (the first step, a warm-up one), last_loss (the last measured),
          peak_allocated_bytes (CUDA).
  decode  greedy generation: prompt P (--prompt), N new tokens (--new-tokens), batch B.
          Weights cast to --precision (bf16 by default; no autocast). A static KV cache of
          P+N positions, per layer k and v [B, KVH, P+N, hd] in the weights' dtype. Prefill
          runs the prompt (SDPA is_causal), writes positions 0..P-1, the argmax of the last
          position is token 1 (TTFT: prefill start to that token). Then N-1 one-token steps:
          the token at position p = P..P+N-2 in, k/v written at p, attention over 0..p, the
          argmax out. Eager form: cache[:, :, p:p+1] = k, SDPA over cache[:, :, :p+1]
          (is_causal False). --compile: torch.compile(step, mode="reduce-overhead",
          fullgraph=True) over the static form: position as a device tensor,
          cache.index_copy_(2, pos, k), SDPA over the whole cache with the boolean mask
          arange(P+N) <= pos (shape [1, 1, 1, P+N]), so the CUDA graph replays. Each step's
          inter-token latency is between consecutive tokens' CUDA events (wall clock on
          CPU). Figures: ttft_ms (median over generations), itl_p50_ms, itl_p99_ms
          (percentiles by linear interpolation over all steps of all measured generations),
          itl_mean_ms, tokens_per_s = B / itl mean (= samples_per_s), param_bytes (every
          parameter once, in the weights' dtype), kv_bytes_mean (k and v of every layer at
          the mean number of positions a step attends, P + N/2), gb_per_s =
          weight_bytes_per_token_gb_per_s = (param_bytes + kv_bytes_mean) / itl_p50.
  check   on the CPU in fp32, tiny sizes (gpt L2 d64 H4 V100 context 32; llama L2 d64 H4
          KVH2 ffn 96 V100), batch 2, prompt 5, 8 new tokens: prefill's and every cached
          step's logits against a full forward over the sequence so far, eager and static
          forms (the static step compiled with --compile), max|diff| / max|full| <= 1e-4.
          Prints {"check": "ok"} (exit 0), else what differed (exit 1).

The measurement rule, as reference.py's: --warmup units (train steps, default 10; decode
generations, default 3), then units until --min-time seconds have passed and the last 3
windows' throughput varies by less than 2% (stdev/mean; a window is --window train steps,
or one generation), or --max-time runs out. --repeat N measures N times in the process:
"repeats" holds each measurement's throughput (train tokens/s from the mean step, decode
tokens/s), "cv" their stdev/mean. --profile FILE records 5 more train steps (or one more
generation) with torch.profiler (Chrome trace). One JSON line on stdout.

  python3 bench/reference/lm.py --case train --model gpt --size 124m --batch 16 --seq 1024 \
      --precision bf16 [--compile]
  python3 bench/reference/lm.py --case decode --model llama --size 1b --batch 1 --prompt 512 \
      --new-tokens 128 [--compile]
  python3 bench/reference/lm.py --case check [--compile]
"""
import argparse
import json
import math
import platform
import statistics
import sys
import time
from dataclasses import asdict

import os

import torch

# The models are the worker's Python twins (worker/python/gpubench_models/lm.py),
# the ones `--execution aot` compiles.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "worker", "python"))
from gpubench_models.lm import (Config, GPT_CONTEXT, GPT_SIZES, GPT_VOCAB,  # noqa: E402
                                LLAMA_SIZES, build, setup_cache)

PEAK_FLOPS = {"bf16": 989.4e12, "fp16": 989.4e12, "tf32": 494.7e12, "fp32": 66.9e12}
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32,
          "fp32": torch.float32}


def make_config(args, needed):
    """The size's shape with the command line's overrides; needed: positions the case uses."""
    over = {k: getattr(args, k) for k in ("layers", "width", "heads", "kv_heads", "ffn", "vocab")
            if getattr(args, k) is not None}
    if args.model == "gpt":
        size = args.size or "124m"
        if size not in GPT_SIZES:
            sys.exit("gpt sizes: %s" % ", ".join(GPT_SIZES))
        layers, width, heads = GPT_SIZES[size]
        base = dict(layers=layers, width=width, heads=heads, kv_heads=heads, ffn=4 * width,
                    vocab=GPT_VOCAB)
        if "kv_heads" in over or "ffn" in over:
            sys.exit("gpt has no --kv-heads or --ffn (kv heads = heads, ffn = 4 * width)")
        base.update(over)
        base["kv_heads"], base["ffn"] = base["heads"], 4 * base["width"]
        context = args.context
        if needed > context:
            sys.exit("gpt: %d positions needed, --context is %d" % (needed, context))
    else:
        size = args.size or "1b"
        if size not in LLAMA_SIZES:
            sys.exit("llama sizes: %s" % ", ".join(LLAMA_SIZES))
        base = dict(zip(("layers", "width", "heads", "kv_heads", "ffn", "vocab"),
                        LLAMA_SIZES[size]))
        base.update(over)
        context = max(args.context, needed)
    c = Config(model=args.model, context=context, **base)
    if c.width % c.heads or c.heads % c.kv_heads or c.head_dim % 2:
        sys.exit("width must split into heads (even head_dim), heads into kv heads")
    return ("custom" if over else size), c


# ---- timing ----
class Clock:
    """CUDA events on CUDA (read after a synchronize), perf_counter on the CPU."""

    def __init__(self, dev):
        self.cuda = dev.type == "cuda"

    def marks(self, n):
        return [torch.cuda.Event(enable_timing=True) if self.cuda else None for _ in range(n)]

    def mark(self, marks, i):
        if self.cuda:
            marks[i].record()
        else:
            marks[i] = time.perf_counter()

    def wait(self, marks, i):
        if self.cuda:
            marks[i].synchronize()

    def ms(self, marks, i, j):
        if self.cuda:
            return marks[i].elapsed_time(marks[j])
        return (marks[j] - marks[i]) * 1e3

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()


def stable(rates, cv=0.02):
    if len(rates) < 3:
        return False
    last = rates[-3:]
    return statistics.pstdev(last) / statistics.mean(last) < cv


def measure(unit, clock, args, warmup):
    """warmup units, then units until min_time and 3 stable windows, or max_time.

    unit() returns (milliseconds, per-unit payload, work units for throughput);
    a window groups `window` units. Returns the list of (ms, payload)."""
    for _ in range(warmup):
        unit()
    clock.sync()
    done, rates, window_ms, window_work = [], [], 0.0, 0
    begin = time.perf_counter()
    while True:
        ms, payload, work = unit()
        done.append((ms, payload))
        window_ms += ms
        window_work += work
        if len(done) % args.window_units == 0:
            rates.append(window_work / window_ms)
            window_ms, window_work = 0.0, 0
        elapsed = time.perf_counter() - begin
        if (elapsed >= args.min_time and stable(rates)) or elapsed >= args.max_time:
            return done


def profile(fn, dev, path, n):
    from torch.profiler import ProfilerActivity, profile as prof_
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])
    with prof_(activities=acts) as prof:
        for _ in range(n):
            fn()
        if dev.type == "cuda":
            torch.cuda.synchronize()
    prof.export_chrome_trace(path)


def percentile(xs, q):
    """Linear interpolation between closest ranks (numpy's default)."""
    xs = sorted(xs)
    if len(xs) == 1:
        return xs[0]
    k = (len(xs) - 1) * q
    lo = math.floor(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def device_name(dev):
    if dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    return "cpu (%s)" % (platform.processor() or platform.machine())


def set_precision(precision):
    tf32 = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32


def spread(rates):
    mean = statistics.mean(rates)
    return {"repeats": rates, "cv": statistics.stdev(rates) / mean if len(rates) > 1 else 0.0}


# ---- cases ----
def run_train(args, dev, out):
    size, c = make_config(args, args.seq)
    model = build(c, dev, args.seed)
    model.train()
    n_all = sum(w.numel() for w in model.parameters())
    n = n_all - model.position_parameters()
    amp = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(args.precision)
    b, t = args.batch, args.seq
    x = torch.randint(0, c.vocab, (b, t), device=dev)
    y = (x + 1) % c.vocab
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr,
                            fused=True if dev.type == "cuda" else None)
    scaler = torch.amp.GradScaler(dev.type, enabled=args.precision == "fp16")
    fwd = torch.compile(model) if args.compile else model

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dev.type, dtype=amp, enabled=amp is not None):
            loss = fwd(x, targets=y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss.detach()

    clock = Clock(dev)
    marks = clock.marks(2)
    losses = {}

    def unit():
        clock.mark(marks, 0)
        loss = step()
        clock.mark(marks, 1)
        clock.wait(marks, 1)
        losses.setdefault("first", loss)
        losses["last"] = loss
        return clock.ms(marks, 0, 1), None, b * t

    args.window_units = args.window
    warmup = 10 if args.warmup is None else args.warmup
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    steps, rates = [], []
    for _ in range(args.repeat):
        done = measure(unit, clock, args, warmup)
        ms = [d[0] for d in done]
        steps += ms
        rates.append(b * t * len(ms) / (sum(ms) / 1e3))
    if args.profile:
        profile(step, dev, args.profile, 5)
    median_ms, mean_ms = statistics.median(steps), statistics.mean(steps)
    tokens_per_s = b * t / (median_ms / 1e3)
    flops_per_token = 6 * n + 12 * c.layers * t * c.width
    name = out["device"]
    peak = PEAK_FLOPS[args.precision] if ("H100" in name or "H200" in name) else None
    out.update(size=size, config=asdict(c), parameters=n_all, parameters_flops=n, batch=b,
               seq=t, steps=len(steps), step_ms=mean_ms, step_ms_median=median_ms,
               tokens_per_s=tokens_per_s, tokens_per_s_mean=b * t / (mean_ms / 1e3),
               samples_per_s=b / (mean_ms / 1e3), flops_per_token=flops_per_token,
               tflops=flops_per_token * tokens_per_s / 1e12, peak_flops=peak,
               mfu=flops_per_token * tokens_per_s / peak if peak else None,
               first_loss=losses["first"].item(), last_loss=losses["last"].item(),
               peak_allocated_bytes=torch.cuda.max_memory_allocated(dev)
               if dev.type == "cuda" else None,
               **spread(rates))


def decode_fns(model, compile_):
    """prefill(prompt) -> first token [B]; step(tok [B, 1], pos [1], p) -> next token [B]."""

    def prefill(prompt):
        return model(prompt, mode="prefill")[:, -1].argmax(-1)

    def eager_step(tok, pos, p):
        return model(tok, mode="eager", pos=pos, p=p)[:, -1].argmax(-1)

    def static_step(tok, pos):
        return model(tok, mode="static", pos=pos)[:, -1].argmax(-1)

    if not compile_:
        return prefill, eager_step
    compiled = torch.compile(static_step, mode="reduce-overhead", fullgraph=True)

    def step(tok, pos, p):
        torch.compiler.cudagraph_mark_step_begin()
        return compiled(tok, pos)

    return prefill, step


def run_decode(args, dev, out):
    pl, nt, b = args.prompt, args.new_tokens, args.batch
    if nt < 2:
        sys.exit("--new-tokens must be at least 2 (one from prefill, then decode steps)")
    length = pl + nt
    size, c = make_config(args, length)
    model = build(c, dev, args.seed).to(DTYPES[args.precision])
    model.eval().requires_grad_(False)
    setup_cache(model, b, length)
    prompt = torch.randint(0, c.vocab, (b, pl), device=dev)
    positions = torch.arange(length, device=dev)
    tokens = torch.empty(b, nt, dtype=torch.long, device=dev)
    prefill, step = decode_fns(model, args.compile)
    clock = Clock(dev)
    marks = clock.marks(nt + 1)

    def generate():
        clock.mark(marks, 0)
        tokens[:, 0] = prefill(prompt)
        clock.mark(marks, 1)
        for i in range(nt - 1):
            p = pl + i
            tokens[:, i + 1] = step(tokens[:, i:i + 1], positions[p:p + 1], p)
            clock.mark(marks, i + 2)

    def unit():
        with torch.no_grad():
            generate()
        clock.wait(marks, nt)
        itl = [clock.ms(marks, i, i + 1) for i in range(1, nt)]
        return sum(itl), (clock.ms(marks, 0, 1), itl), b * (nt - 1)

    args.window_units = 1
    warmup = 3 if args.warmup is None else args.warmup
    ttfts, itls, rates = [], [], []
    for _ in range(args.repeat):
        done = measure(unit, clock, args, warmup)
        rep_itl = [x for _, (_, itl) in done for x in itl]
        ttfts += [ttft for _, (ttft, _) in done]
        itls += rep_itl
        rates.append(b / (statistics.mean(rep_itl) / 1e3))
    if args.profile:
        with torch.no_grad():
            profile(generate, dev, args.profile, 1)
    elem = torch.empty((), dtype=DTYPES[args.precision]).element_size()
    param_bytes = sum(w.numel() for w in model.parameters()) * elem
    kv_bytes_mean = c.layers * 2 * b * c.kv_heads * c.head_dim * (pl + nt / 2) * elem
    itl_p50, itl_mean = percentile(itls, 0.5), statistics.mean(itls)
    gbps = (param_bytes + kv_bytes_mean) / (itl_p50 / 1e3) / 1e9
    out.update(size=size, config=asdict(c), parameters=sum(w.numel() for w in model.parameters()),
               batch=b, prompt=pl, new_tokens=nt, form="static" if args.compile else "eager",
               generations=len(ttfts), ttft_ms=statistics.median(ttfts), itl_p50_ms=itl_p50,
               itl_p99_ms=percentile(itls, 0.99), itl_mean_ms=itl_mean,
               tokens_per_s=b / (itl_mean / 1e3), samples_per_s=b / (itl_mean / 1e3),
               step_ms=itl_mean, param_bytes=param_bytes, kv_bytes_mean=kv_bytes_mean,
               weight_bytes_per_token_gb_per_s=gbps, gb_per_s=gbps,
               peak_allocated_bytes=torch.cuda.max_memory_allocated(dev)
               if dev.type == "cuda" else None,
               **spread(rates))


def run_check(args):
    """Cached decoding against full forwards, fp32 on the CPU; returns the failures."""
    dev = torch.device("cpu")
    tiny = {"gpt": Config("gpt", 2, 64, 4, 4, 256, 100, 32),
            "llama": Config("llama", 2, 64, 4, 2, 96, 100, 32)}
    b, pl, nt, tol = 2, 5, 8, 1e-4
    failures, worst = [], {}
    for name, c in tiny.items():
        for form in ("eager", "static"):
            model = build(c, dev, args.seed).eval().requires_grad_(False)
            setup_cache(model, b, pl + nt)

            def step(tok, pos, p, model=model, form=form):
                return model(tok, mode=form, pos=pos, p=p if form == "eager" else None)

            if form == "static" and args.compile:
                fn = torch.compile(lambda tok, pos, model=model: model(tok, mode="static", pos=pos),
                                   mode="reduce-overhead", fullgraph=True)

                def step(tok, pos, p, fn=fn):  # noqa: F811
                    torch.compiler.cudagraph_mark_step_begin()
                    return fn(tok, pos).clone()

            torch.manual_seed(args.seed + 1)
            seq = torch.randint(0, c.vocab, (b, pl))
            positions = torch.arange(pl + nt)
            err = 0.0
            with torch.no_grad():
                got = model(seq, mode="prefill")[:, -1]
                for i in range(nt):
                    want = model(seq)[:, -1]
                    rel = ((got - want).abs().max() / want.abs().max()).item()
                    err = max(err, rel)
                    if not rel <= tol:
                        failures.append({"model": name, "form": form, "position": seq.shape[1] - 1,
                                         "max_rel_diff": rel})
                    if i == nt - 1:
                        break
                    nxt = got.argmax(-1, keepdim=True)
                    p = seq.shape[1]
                    seq = torch.cat((seq, nxt), dim=1)
                    got = step(nxt, positions[p:p + 1], p)[:, -1]
            worst["%s_%s" % (name, form)] = err
    print(json.dumps({"max_rel_diff": worst}), file=sys.stderr)
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", required=True, choices=["train", "decode", "check"])
    ap.add_argument("--name", help="a label, echoed in the JSON")
    ap.add_argument("--model", default="gpt", choices=["gpt", "llama"])
    ap.add_argument("--size", help="gpt: 124m (default), 350m, 774m, 1.3b; llama: 1b (default), "
                                   "small")
    ap.add_argument("--layers", type=int)
    ap.add_argument("--width", type=int)
    ap.add_argument("--heads", type=int)
    ap.add_argument("--kv-heads", type=int, help="llama only")
    ap.add_argument("--ffn", type=int, help="llama only")
    ap.add_argument("--vocab", type=int)
    ap.add_argument("--context", type=int, default=GPT_CONTEXT)
    ap.add_argument("--batch", type=int, help="train 16, decode 1")
    ap.add_argument("--seq", type=int, default=1024, help="train: tokens per sequence")
    ap.add_argument("--prompt", type=int, default=512, help="decode: prompt tokens")
    ap.add_argument("--new-tokens", type=int, default=128, help="decode: generated tokens")
    ap.add_argument("--precision", default="bf16", choices=["bf16", "fp16", "tf32", "fp32"])
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", help="cuda when there is one, else cpu")
    ap.add_argument("--warmup", type=int, help="train steps (10) or decode generations (3)")
    ap.add_argument("--window", type=int, default=10, help="train steps per stability window")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--min-time", type=float, default=2.0, help="seconds per measurement")
    ap.add_argument("--max-time", type=float, default=20.0, help="seconds per measurement")
    ap.add_argument("--profile", help="write a torch.profiler Chrome trace here (5 train steps, "
                                      "or 1 generation)")
    args = ap.parse_args()
    if args.case == "check":
        failures = run_check(args)
        if failures:
            print(json.dumps({"check": "failed", "failures": failures}), flush=True)
            sys.exit(1)
        print(json.dumps({"check": "ok"}), flush=True)
        return
    dev = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if args.batch is None:
        args.batch = 16 if args.case == "train" else 1
    set_precision(args.precision)
    out = {"case": args.case}
    if args.name:
        out["name"] = args.name
    out.update(model=args.model, precision=args.precision, compile=args.compile,
               device=device_name(dev), torch=torch.__version__)
    (run_train if args.case == "train" else run_decode)(args, dev, out)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
