"""The language models' Python twins (gpt, llama), shared by the AOTInductor
compile (aot.py: prefill and one decode step, exported with the KV cache as
inputs) and the Python reference (bench/reference/lm.py), which documents
their shapes and initialisation.

Every attention keeps a static KV cache. mode full (no cache, causal),
prefill (causal, writes the cache at 0..T-1), eager (T = 1 at the host
position p, attends over the cache up to it), static (T = 1 at the device
position pos [1]: index_copy_, the whole cache under a mask) or rows (serving:
T = 1 for the cache's rows 0..n-1, each at its own position pos [n, 1],
attending over its own row's positions up to it of the first p). The cache is the
module's buffers (setup_cache), or, where forward gets caches, the tensors
given: a list of (k, v) per layer, each [B, KVH, S, hd], written in place.
"""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

GPT_SIZES = {"124m": (12, 768, 12), "350m": (24, 1024, 16), "774m": (36, 1280, 20),
             "1.3b": (24, 2048, 16)}
LLAMA_SIZES = {"1b": (16, 2048, 32, 8, 8192, 128256), "small": (4, 256, 4, 2, 768, 32000)}
GPT_VOCAB, GPT_CONTEXT = 50304, 1024
ROPE_THETA = 500000.0


@dataclass
class Config:
    model: str
    layers: int
    width: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    context: int  # gpt: wpe rows; llama: rotary table rows

    @property
    def head_dim(self):
        return self.width // self.heads


# ---- the models ----
def repeat_kv(x, rep):
    """[B, KVH, S, hd] -> [B, KVH*rep, S, hd]; head h reads KV head h // rep."""
    if rep == 1:
        return x
    b, kvh, s, hd = x.shape
    return x[:, :, None].expand(b, kvh, rep, s, hd).reshape(b, kvh * rep, s, hd)


# SDPA's enable_gqa (torch 2.5 on): grouped key/value heads read as they are.
_GROUPED = "enable_gqa" in (F.scaled_dot_product_attention.__doc__ or "")


def sdpa(q, k, v, rep, **kw):
    """SDPA of q over k and v whose heads each serve rep query heads: read as they are
    (enable_gqa: no copy with the heads repeated, as the C++ models where a fused kernel
    takes them; SDPA's math repeats them itself), else repeated. enable_gqa also keeps
    torch.export's dynamic prompt length free of the repeat's reshape guards."""
    if rep > 1 and _GROUPED:
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True, **kw)
    return F.scaled_dot_product_attention(q, repeat_kv(k, rep), repeat_kv(v, rep), **kw)


class CachedAttention(nn.Module):
    """The attention of both models over q [B, H, T, hd], k and v [B, KVH, T, hd].

    mode: full (no cache, causal), prefill (causal, writes the cache at 0..T-1),
    eager (T = 1 at int position p: cache[:, :, p:p+1] = k, attends over [:p+1]),
    static (T = 1 at device position pos [1]: index_copy_, the whole cache, masked).
    """

    def __init__(self, heads, kv_heads, head_dim):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.register_buffer("k_cache", None, persistent=False)
        self.register_buffer("v_cache", None, persistent=False)

    def setup_cache(self, batch, length, dtype, device):
        shape = (batch, self.kv_heads, length, self.head_dim)
        self.k_cache = torch.zeros(shape, dtype=dtype, device=device)
        self.v_cache = torch.zeros(shape, dtype=dtype, device=device)
        # Fixed addresses, so the compiled step's CUDA graph writes them in place.
        torch._dynamo.mark_static_address(self.k_cache)
        torch._dynamo.mark_static_address(self.v_cache)

    def attend(self, q, k, v, mode, pos, p, cache=None):
        rep = self.heads // self.kv_heads
        k_cache, v_cache = (self.k_cache, self.v_cache) if cache is None else cache
        if mode == "eager":
            k_cache[:, :, p:p + 1] = k
            v_cache[:, :, p:p + 1] = v
            k, v = k_cache[:, :, :p + 1], v_cache[:, :, :p + 1]
            return sdpa(q, k, v, rep, is_causal=False)
        if mode == "rows":
            n, span = q.shape[0], p
            # Row r's key and value at (r, every head, its position): index_put_ on the
            # whole cache, which a compiled step writes in place (a scatter_ into the rows'
            # slice copies that slice out and back, each layer, each step).
            rows, at = torch.arange(n, device=q.device), pos.view(n)
            k_cache[rows, :, at] = k[:, :, 0]
            v_cache[rows, :, at] = v[:, :, 0]
            mask = (torch.arange(span, device=q.device).view(1, span) <= pos.view(n, 1))
            return sdpa(q, k_cache[:n, :, :span], v_cache[:n, :, :span], rep,
                        attn_mask=mask.view(n, 1, 1, span))
        if mode == "static":
            k_cache.index_copy_(2, pos, k)
            v_cache.index_copy_(2, pos, v)
            length = k_cache.shape[2]
            mask = (torch.arange(length, device=q.device) <= pos).view(1, 1, 1, length)
            return sdpa(q, k_cache, v_cache, rep, attn_mask=mask)
        if mode == "prefill":
            t = k.shape[2]
            k_cache[:, :, :t] = k
            v_cache[:, :, :t] = v
        return sdpa(q, k, v, rep, is_causal=True)


class GptAttention(CachedAttention):
    def __init__(self, c):
        super().__init__(c.heads, c.heads, c.head_dim)
        self.c_attn = nn.Linear(c.width, 3 * c.width)
        self.c_proj = nn.Linear(c.width, c.width)

    def forward(self, x, mode, pos, p, cache=None):
        b, t, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, self.head_dim).transpose(1, 2) for z in (q, k, v))
        y = self.attend(q, k, v, mode, pos, p, cache)
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, d))


class GptMlp(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = nn.Linear(c.width, 4 * c.width)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * c.width, c.width)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class GptBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c.width, bias=True)
        self.attn = GptAttention(c)
        self.ln_2 = nn.LayerNorm(c.width, bias=True)
        self.mlp = GptMlp(c)

    def forward(self, x, mode, pos, p, cache=None):
        x = x + self.attn(self.ln_1(x), mode, pos, p, cache)
        return x + self.mlp(self.ln_2(x))


class Gpt(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(c.vocab, c.width),
            wpe=nn.Embedding(c.context, c.width),
            h=nn.ModuleList(GptBlock(c) for _ in range(c.layers)),
            ln_f=nn.LayerNorm(c.width, bias=True)))
        self.lm_head = nn.Linear(c.width, c.vocab, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # tied
        self.apply(_init_weights)
        for name, w in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(w, mean=0.0, std=0.02 / math.sqrt(2 * c.layers))

    def position_parameters(self):
        return self.transformer.wpe.weight.numel()

    def forward(self, idx, targets=None, mode="full", pos=None, p=None, caches=None):
        t = idx.shape[1]
        if pos is None:
            pos = torch.arange(t, device=idx.device)
        tr = self.transformer
        x = tr.wte(idx) + tr.wpe(pos)
        for i, block in enumerate(tr.h):
            x = block(x, mode, pos, p, None if caches is None else caches[i])
        if mode == "prefill":
            x = x[:, -1:]
        logits = self.lm_head(tr.ln_f(x))
        if targets is not None:
            return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))
        return logits


def rope_tables(c):
    hd = c.head_dim
    inv_freq = 1.0 / (ROPE_THETA ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    freqs = torch.outer(torch.arange(c.context, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().float(), emb.sin().float()


def apply_rope(x, cos, sin):
    """x [B, heads, T, hd]; cos and sin [T, hd] (cast to x's dtype, as HF's Llama)."""
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class LlamaAttention(CachedAttention):
    def __init__(self, c):
        super().__init__(c.heads, c.kv_heads, c.head_dim)
        self.wq = nn.Linear(c.width, c.heads * c.head_dim, bias=False)
        self.wk = nn.Linear(c.width, c.kv_heads * c.head_dim, bias=False)
        self.wv = nn.Linear(c.width, c.kv_heads * c.head_dim, bias=False)
        self.wo = nn.Linear(c.heads * c.head_dim, c.width, bias=False)

    def forward(self, x, cos, sin, mode, pos, p, cache=None):
        b, t, _ = x.shape
        q = self.wq(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        y = self.attend(q, k, v, mode, pos, p, cache)
        return self.wo(y.transpose(1, 2).contiguous().view(b, t, -1))


class SwiGlu(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.w1 = nn.Linear(c.width, c.ffn, bias=False)
        self.w2 = nn.Linear(c.ffn, c.width, bias=False)
        self.w3 = nn.Linear(c.width, c.ffn, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class LlamaBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention_norm = nn.RMSNorm(c.width, eps=1e-5)
        self.attention = LlamaAttention(c)
        self.ffn_norm = nn.RMSNorm(c.width, eps=1e-5)
        self.feed_forward = SwiGlu(c)

    def forward(self, x, cos, sin, mode, pos, p, cache=None):
        h = x + self.attention(self.attention_norm(x), cos, sin, mode, pos, p, cache)
        return h + self.feed_forward(self.ffn_norm(h))


class Llama(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.tok_embeddings = nn.Embedding(c.vocab, c.width)
        self.layers = nn.ModuleList(LlamaBlock(c) for _ in range(c.layers))
        self.norm = nn.RMSNorm(c.width, eps=1e-5)
        self.output = nn.Linear(c.width, c.vocab, bias=False)
        cos, sin = rope_tables(c)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.apply(_init_weights)
        for name, w in self.named_parameters():
            if name.endswith("wo.weight") or name.endswith("w2.weight"):
                nn.init.normal_(w, mean=0.0, std=0.02 / math.sqrt(2 * c.layers))

    def position_parameters(self):
        return 0

    def forward(self, idx, targets=None, mode="full", pos=None, p=None, caches=None):
        t = idx.shape[1]
        if pos is None:
            pos = torch.arange(t, device=idx.device)
        cos, sin = self.rope_cos[pos], self.rope_sin[pos]
        if mode == "rows":  # pos [n, 1]: each row's tables beside q [n, heads, 1, hd]
            cos, sin = cos[:, None], sin[:, None]
        x = self.tok_embeddings(idx)
        for i, block in enumerate(self.layers):
            x = block(x, cos, sin, mode, pos, p, None if caches is None else caches[i])
        if mode == "prefill":
            x = x[:, -1:]
        logits = self.output(self.norm(x))
        if targets is not None:
            return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))
        return logits


def _init_weights(m):
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, mean=0.0, std=0.02)
        if m.bias is not None:
            nn.init.zeros_(m.bias)
    elif isinstance(m, nn.Embedding):
        nn.init.normal_(m.weight, mean=0.0, std=0.02)


def build(c, dev, seed):
    torch.manual_seed(seed)
    with torch.device(dev):
        return (Gpt if c.model == "gpt" else Llama)(c)


def setup_cache(model, batch, length):
    w = next(model.parameters())
    for m in model.modules():
        if isinstance(m, CachedAttention):
            m.setup_cache(batch, length, w.dtype, w.device)


class Prefill(nn.Module):
    """prefill(prompt [B, P], caches) -> the last position's logits [B, V]; caches: a flat
    list k0, v0, k1, v1... of [B, KVH, S, hd], positions 0..P-1 written in place."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, prompt, caches):
        pairs = [(caches[2 * i], caches[2 * i + 1]) for i in range(len(caches) // 2)]
        return self.model(prompt, mode="prefill", caches=pairs)[:, -1]


class Step(nn.Module):
    """step(token [B, 1], position [1], caches) -> logits [B, V]: the static form (the
    token's keys and values written at position, the whole cache attended under a mask)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, token, position, caches):
        pairs = [(caches[2 * i], caches[2 * i + 1]) for i in range(len(caches) // 2)]
        return self.model(token, mode="static", pos=position, caches=pairs)[:, -1]


class PrefillSlots(nn.Module):
    """prefill_slots(prompts [k, P], slots [k], caches) -> the last position's logits [k, V]:
    serving's prefill of k whole prompts, each one's keys and values written to its own row
    (slot) of the caches at positions 0..P-1, in place; the caches as Prefill's, with a row
    a slot."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, prompts, slots, caches):
        k, p = prompts.shape
        fresh = [torch.empty((k,) + tuple(t.shape[1:2]) + (p,) + tuple(t.shape[3:]),
                             dtype=t.dtype, device=t.device) for t in caches]
        pairs = [(fresh[2 * i], fresh[2 * i + 1]) for i in range(len(fresh) // 2)]
        logits = self.model(prompts, mode="prefill", caches=pairs)[:, -1]
        # (slot, every head, 0..P-1) of the whole cache: index_put_, which a compiled
        # prefill writes in place (an index_copy_ into the positions' slice copies the
        # slice out and back).
        at = torch.arange(p, device=prompts.device)
        for cache, rows in zip(caches, fresh):
            cache[slots.view(k, 1), :, at.view(1, p)] = rows.transpose(1, 2)
        return logits


class Rows(nn.Module):
    """rows(tokens [n, 1], positions [n], caches) -> logits [n, V]: serving's decode step of
    the caches' rows 0..n-1, each at its own position (its keys and values written there),
    over the whole cache under each row's mask."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, tokens, positions, caches):
        pairs = [(caches[2 * i], caches[2 * i + 1]) for i in range(len(caches) // 2)]
        return self.model(tokens, mode="rows", pos=positions.view(-1, 1),
                          p=caches[0].shape[2], caches=pairs)[:, -1]


def new_caches(c, batch, length, dtype, device):
    """The flat cache list Prefill and Step take: k and v of each layer, zeros."""
    shape = (batch, c.kv_heads, length, c.head_dim)
    return [torch.zeros(shape, dtype=dtype, device=device) for _ in range(2 * c.layers)]
