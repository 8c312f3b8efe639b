#!/usr/bin/env python3
"""Python PyTorch twin of gpubench's serving scheduler (worker/serve.cc,
worker/engine/workloads/serve.cc), for the side by side of docs/serving.md.

The same models (the worker's twins, worker/python/gpubench_models/lm.py, weights cast to
--precision), the same requests and the same rule:
  requests  request i's gap and lengths from SplitMix64 seeded by (seed, i) alone; gaps
            exponential (Poisson) at --rate, or a closed loop of --concurrency clients
            (--rate 0); lengths uniform in [--input-len, --input-len-max] and [--output-len,
            --output-len-max]; request i's prompt from SplitMix64 seeded by (seed, i + 1).
  schedule  a KV cache of --slots rows; each step admits waiting requests into the lowest
            free rows (their prompts prefilled together, a batch a length), decodes one token for
            every row in use (rows 0..n-1, n past the highest in use, each at its own
            position, attending over its own row), retires the finished ones; each step
            waits for its tokens on the host (.tolist()).
  figures   over the --num-requests after the --warmup-requests (default the concurrency,
            or the slots in an open loop): TTFT from arrival to the first token, TPOT
            (e2e - ttft) / (output - 1), ITL each gap, E2E; the window from the first
            measured arrival to the last measured end; output tokens/s in it.
Prints one JSON object.
  python3 bench/reference/serve.py --model gpt --size 124m --slots 16 --concurrency 16 \\
      --input-len 512 --output-len 256 --num-requests 48
  python3 bench/reference/serve.py --requests 5 --seed 3 --input-len 2 --input-len-max 9 \\
      --output-len 1 --output-len-max 4    (prints the requests alone: gpubench's own)
"""
import argparse
import collections
import json
import math
import os
import statistics
import sys
import time

MASK = (1 << 64) - 1


def splitmix(state):
    """(next state, output) of SplitMix64."""
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


class Generator:
    """worker/serve.cc's: seeded by (seed, id)."""

    def __init__(self, seed, request_id):
        self.state = seed & MASK
        self.state, out = splitmix(self.state)
        self.state = out ^ (request_id & MASK)
        self.state, _ = splitmix(self.state)

    def next(self):
        self.state, out = splitmix(self.state)
        return out

    def uniform(self):
        return ((self.next() >> 11) + 0.5) * 2.0 ** -53

    def between(self, lo, hi):
        if hi <= lo:
            return lo
        return lo + int(self.uniform() * (hi - lo + 1))


def requests(args):
    """The load's requests, in order: dicts of id, arrival_s (open loop), input, output."""
    arrival, i = 0.0, 0
    while True:
        g = Generator(args.seed, i)
        if i > 0 and args.rate > 0:
            arrival += -math.log(g.uniform()) / args.rate
        yield dict(id=i, arrival_s=arrival,
                   input=g.between(args.input_len, args.input_len_max),
                   output=g.between(args.output_len, args.output_len_max))
        i += 1


def prompt_of(request, vocab, seed):
    """worker/engine/workloads/serve.cc's PromptOf: SplitMix64's k-th output is the mix of
    state + k * golden, so numpy draws a prompt at once (a Python loop per token would be
    the twin's own cost inside its timed steps)."""
    state = (seed ^ ((0x9E3779B97F4A7C15 * (request["id"] + 1)) & MASK)) & MASK
    try:
        import numpy as np
    except ImportError:
        ids = []
        for _ in range(request["input"]):
            state, out = splitmix(state)
            ids.append(out % vocab)
        return ids
    with np.errstate(over="ignore"):
        k = np.arange(1, request["input"] + 1, dtype=np.uint64)
        z = np.uint64(state) + k * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z % np.uint64(vocab)).astype(np.int64).tolist()


def serve(args, model, torch, dev):
    from gpubench_models.lm import setup_cache  # noqa: F401 (the cache shapes' owner)
    c = model.config
    dtype = next(model.parameters()).dtype
    longest = args.input_len_max or args.input_len
    longest += args.output_len_max or args.output_len
    caches = [(torch.zeros(args.slots, c.kv_heads, longest, c.head_dim, dtype=dtype, device=dev),
               torch.zeros(args.slots, c.kv_heads, longest, c.head_dim, dtype=dtype, device=dev))
              for _ in range(c.layers)]
    last = torch.zeros(args.slots, 1, dtype=torch.long, device=dev)
    warmup = args.warmup_requests
    if warmup is None:
        warmup = args.concurrency if args.rate == 0 else args.slots
    measured = range(warmup, warmup + args.num_requests)
    source = requests(args)
    flights, waiting, slot_of = {}, collections.deque(), [None] * args.slots
    tokens = []  # (time, count)
    itl = []
    start = time.perf_counter()
    done_measured = 0

    def arrive(r, at):
        r.update(arrival=at, generated=0, last=None, first=None, done=None,
                 prompt=prompt_of(r, c.vocab, args.seed))
        flights[r["id"]] = r
        waiting.append(r["id"])

    def finish(r, now):
        nonlocal done_measured
        r["done"] = now
        if r["id"] in measured:
            done_measured += 1
        if done_measured < args.num_requests and args.rate == 0:
            arrive(next(source), now)

    nxt = None
    if args.rate > 0:
        nxt = next(source)
    else:
        for _ in range(args.concurrency):
            arrive(next(source), start)
    with torch.inference_mode():
        while done_measured < args.num_requests:
            now = time.perf_counter()
            while nxt is not None and start + nxt["arrival_s"] <= now:
                arrive(nxt, start + nxt["arrival_s"])
                nxt = next(source)
            admitted = []
            for slot in range(args.slots):
                if slot_of[slot] is not None or not waiting:
                    continue
                slot_of[slot] = waiting.popleft()
                admitted.append(slot)
            by_length = collections.defaultdict(list)
            for slot in admitted:
                by_length[flights[slot_of[slot]]["input"]].append(slot)
            for length, slots in by_length.items():
                # One batch a length: its keys and values into its rows of the cache.
                prompts = torch.tensor([flights[slot_of[s]]["prompt"] for s in slots],
                                       device=dev)
                rows = torch.tensor(slots, device=dev)
                fresh = [(torch.empty(len(slots), c.kv_heads, length, c.head_dim, dtype=dtype,
                                      device=dev),
                          torch.empty(len(slots), c.kv_heads, length, c.head_dim, dtype=dtype,
                                      device=dev)) for _ in caches]
                token = model(prompts, mode="prefill", caches=fresh)[:, -1].argmax(-1, keepdim=True)
                for (k, v), (fk, fv) in zip(caches, fresh):
                    k[:, :, :length].index_copy_(0, rows, fk)
                    v[:, :, :length].index_copy_(0, rows, fv)
                last.index_copy_(0, rows, token)
                token.tolist()
            if admitted:
                t = time.perf_counter()
                tokens.append((t, len(admitted)))
                for slot in admitted:
                    r = flights[slot_of[slot]]
                    r.update(first=t, last=t, generated=1)
                    if r["generated"] == r["output"]:
                        slot_of[slot] = None
                        finish(r, t)
            active = [s for s in range(args.slots) if slot_of[s] is not None]
            if not active:
                if waiting:
                    continue
                if nxt is None:
                    break
                time.sleep(max(0.0, start + nxt["arrival_s"] - time.perf_counter()))
                continue
            n = active[-1] + 1
            positions = [0] * n
            for s in active:
                r = flights[slot_of[s]]
                positions[s] = r["input"] + r["generated"] - 1
            span = max(positions) + 1
            pos = torch.tensor(positions, device=dev).view(n, 1)
            logits = model(last[:n], mode="rows", pos=pos, p=span, caches=caches)
            last[:n].copy_(logits[:, -1].argmax(-1, keepdim=True))
            last[:n].tolist()
            t = time.perf_counter()
            tokens.append((t, len(active)))
            for s in active:
                r = flights[slot_of[s]]
                if r["id"] in measured:
                    itl.append((t - r["last"]) * 1e3)
                r["last"] = t
                r["generated"] += 1
                if r["generated"] == r["output"]:
                    slot_of[s] = None
                    finish(r, t)
    done = [flights[i] for i in measured if i in flights and flights[i]["done"] is not None]
    first_arrival = min(r["arrival"] for r in done)
    end = max(r["done"] for r in done)
    window = end - first_arrival
    generated = sum(n for t, n in tokens if first_arrival < t <= end)
    ttft = [(r["first"] - r["arrival"]) * 1e3 for r in done]
    e2e = [(r["done"] - r["arrival"]) * 1e3 for r in done]
    tpot = [(e - f) / (r["output"] - 1) for r, e, f in zip(done, e2e, ttft) if r["output"] > 1]

    def pct(values, q):
        if not values:
            return 0.0
        v = sorted(values)
        pos_ = q * (len(v) - 1)
        lo = math.floor(pos_)
        hi = min(lo + 1, len(v) - 1)
        return v[lo] + (v[hi] - v[lo]) * (pos_ - lo)

    return dict(requests=len(done), window_ms=window * 1e3,
                output_tokens_per_s=generated / window if window > 0 else 0,
                ttft_p50_ms=pct(ttft, 0.5), ttft_p99_ms=pct(ttft, 0.99),
                tpot_p50_ms=pct(tpot, 0.5), tpot_p99_ms=pct(tpot, 0.99),
                itl_p50_ms=pct(itl, 0.5), itl_p99_ms=pct(itl, 0.99),
                e2e_p50_ms=pct(e2e, 0.5), e2e_p99_ms=pct(e2e, 0.99),
                tokens_per_s_per_user=1000 / statistics.median(tpot) if tpot else 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="gpt", choices=["gpt", "llama"])
    ap.add_argument("--size", default=None)
    ap.add_argument("--layers", type=int)
    ap.add_argument("--width", type=int)
    ap.add_argument("--heads", type=int)
    ap.add_argument("--kv-heads", type=int)
    ap.add_argument("--ffn", type=int)
    ap.add_argument("--vocab", type=int)
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--precision", default="bf16", choices=["bf16", "fp16", "fp32"])
    ap.add_argument("--slots", type=int, default=16)
    ap.add_argument("--rate", type=float, default=0.0)
    ap.add_argument("--concurrency", type=int, default=None)
    ap.add_argument("--warmup-requests", type=int, default=None)
    ap.add_argument("--num-requests", type=int, default=200)
    ap.add_argument("--input-len", type=int, default=512)
    ap.add_argument("--input-len-max", type=int, default=0)
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--output-len-max", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--weights-seed", type=int, default=0)
    ap.add_argument("--requests", type=int, default=0,
                    help="print the first N requests as JSON Lines and stop")
    args = ap.parse_args()
    if args.concurrency is None:
        args.concurrency = args.slots if args.rate == 0 else 0
    if args.requests:
        source = requests(args)
        for _ in range(args.requests):
            r = next(source)
            print(json.dumps(dict(id=r["id"], arrival_ns=round(r["arrival_s"] * 1e9),
                                  input_tokens=r["input"], output_tokens=r["output"])))
        return
    if args.rate > 0 and args.concurrency:
        sys.exit("the twin's open loop has no concurrency limit")
    import torch
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "worker", "python"))
    from gpubench_models.lm import build  # noqa: E402
    from lm import make_config  # noqa: E402  (bench/reference/lm.py's sizes)
    longest = (args.input_len_max or args.input_len) + (args.output_len_max or args.output_len)
    size, c = make_config(args, longest)
    dev = torch.device(args.device)
    model = build(c, dev, args.weights_seed)
    model.to({"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[
        args.precision]).eval()
    out = serve(args, model, torch, dev)
    out.update(model=args.model, size=size, slots=args.slots, rate=args.rate,
               concurrency=args.concurrency, torch=torch.__version__,
               device=torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
