#!/usr/bin/env python3
"""Python PyTorch reference for bench/gpu_multi.sh (issue 20, multi-GPU).

Plain torch.distributed (NCCL), one process per GPU (torch.multiprocessing.spawn),
rendezvous over a TCP store on 127.0.0.1 at a free port. Rank r uses cuda:r.
The environment reaches the children unchanged; NCCL_NVLS_ENABLE=0,
TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and NVSHMEM_DISABLE_NVLS=1 are set (unless
already set) before spawning. Only rank 0 prints: a CSV header, then rows.

  collective  nccl-tests' method (all_reduce_perf etc.): per op and size (powers
              of two from --min-bytes to --max-bytes), --warmup ops, then --iters
              back-to-back ops timed with time.perf_counter between two
              torch.cuda.synchronize(); the time per op is averaged over ranks (as
              nccl-tests' default -a 1). Sizes as nccl-tests: all_reduce and
              broadcast, the tensor; all_gather, the whole output
              (all_gather_into_tensor, size/K from each rank); reduce_scatter, the
              whole input (reduce_scatter_tensor). all_gather and reduce_scatter
              are out of place; all_reduce and broadcast are in place (the only
              form torch.distributed has; NCCL's speed is the same). algbw =
              bytes/time; busbw = algbw * 2(K-1)/K (all_reduce), (K-1)/K
              (all_gather, reduce_scatter), 1 (broadcast): 0 at K=1, as nccl-tests.
              Rows: op,bytes,ranks,time_us,algbw_gbs,busbw_gbs (GB = 1e9 bytes).
  ddp         ResNet-50 training under DistributedDataParallel (defaults), SGD
              momentum 0.9 lr 0.01 (fused where torch has it), autocast to
              --precision (fp16 with a GradScaler), synthetic input on the device,
              --batch per rank, cross-entropy over 1000 classes. --warmup steps,
              then --iters steps timed between synchronizations (the slowest
              rank's time). Row: ddp,model,ranks,batch_per_rank,samples_per_s,
              samples of all ranks (K * batch * iters / time).

  python3 bench/reference/distributed.py collective --ranks 4 --min-bytes 8 \
      --max-bytes 1073741824 --dtype fp32 --iters 20 --warmup 5
  python3 bench/reference/distributed.py ddp --ranks 4 --model resnet50 --batch 256 \
      --precision bf16 --channels-last --iters 30 --warmup 10
"""
import argparse
import inspect
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast")


def bus_factor(op, k):
    return {"all_reduce": 2 * (k - 1) / k, "all_gather": (k - 1) / k,
            "reduce_scatter": (k - 1) / k, "broadcast": 1.0}[op]


def timed(fn, n, k, dev):
    """Seconds per call of fn over n back-to-back calls, averaged over ranks."""
    dist.barrier()
    torch.cuda.synchronize()
    begin = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    t = torch.tensor([(time.perf_counter() - begin) / n], dtype=torch.float64, device=dev)
    dist.all_reduce(t)
    return t.item() / k


def collective(rank, k, args, dev):
    dtype = DTYPES[args.dtype]
    esize = torch.tensor([], dtype=dtype).element_size()
    if rank == 0:
        print("op,bytes,ranks,time_us,algbw_gbs,busbw_gbs", flush=True)
    for op in args.ops.split(","):
        size = args.min_bytes
        while size <= args.max_bytes:
            elems = size // esize
            if op in ("all_gather", "reduce_scatter"):
                elems = elems // k * k  # each rank's share is whole elements
            size *= 2
            if elems == 0:
                continue
            if op == "all_reduce":
                buf = torch.zeros(elems, dtype=dtype, device=dev)
                fn = lambda: dist.all_reduce(buf)  # noqa: E731
            elif op == "broadcast":
                buf = torch.zeros(elems, dtype=dtype, device=dev)
                fn = lambda: dist.broadcast(buf, src=0)  # noqa: E731
            elif op == "all_gather":
                src = torch.zeros(elems // k, dtype=dtype, device=dev)
                buf = torch.empty(elems, dtype=dtype, device=dev)
                fn = lambda: dist.all_gather_into_tensor(buf, src)  # noqa: E731
            else:
                src = torch.zeros(elems, dtype=dtype, device=dev)
                buf = torch.empty(elems // k, dtype=dtype, device=dev)
                fn = lambda: dist.reduce_scatter_tensor(buf, src)  # noqa: E731
            for _ in range(args.warmup):
                fn()
            sec = timed(fn, args.iters, k, dev)
            nbytes = elems * esize
            algbw = nbytes / sec / 1e9
            if rank == 0:
                print(f"{op},{nbytes},{k},{sec * 1e6:.3f},{algbw:.3f},"
                      f"{algbw * bus_factor(op, k):.3f}", flush=True)
            fn = buf = src = None  # free before the next size


def build_model(name):
    try:
        import torchvision
        return getattr(torchvision.models, name)(weights=None, num_classes=1000)
    except ImportError:
        pass
    # No torchvision: gpubench's own Python twin (the same network and parameters).
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "worker", "python"))
    try:
        from gpubench_models import defaults, models
    except ImportError:
        sys.exit(f"distributed.py: {name} needs torchvision or worker/python/gpubench_models")
    return models.create(name, defaults.params(name, num_classes=1000))


def ddp(rank, k, args, dev):
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.backends.cudnn.benchmark = args.cudnn_benchmark
    torch.backends.cudnn.allow_tf32 = args.precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = args.precision == "tf32"
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format
    model = build_model(args.model).to(dev, memory_format=fmt)
    model = DDP(model, device_ids=[rank])
    kw = {"fused": True} if "fused" in inspect.signature(torch.optim.SGD).parameters else {}
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, **kw)
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(args.precision)
    scaler = torch.amp.GradScaler("cuda", enabled=dtype == torch.float16)
    x = torch.randn(args.batch, 3, 224, 224, device=dev).to(memory_format=fmt)
    y = torch.randint(0, 1000, (args.batch,), device=dev)
    model.train()

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    for _ in range(args.warmup):
        step()
    dist.barrier()
    torch.cuda.synchronize()
    begin = time.perf_counter()
    for _ in range(args.iters):
        step()
    torch.cuda.synchronize()
    t = torch.tensor([time.perf_counter() - begin], dtype=torch.float64, device=dev)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    if rank == 0:
        print("ddp,model,ranks,batch_per_rank,samples_per_s")
        print(f"ddp,{args.model},{k},{args.batch},{k * args.batch * args.iters / t.item():.1f}",
              flush=True)


def worker(rank, args):
    dev = torch.device("cuda", rank)
    torch.cuda.set_device(dev)
    kw = {"device_id": dev} if "device_id" in inspect.signature(
        dist.init_process_group).parameters else {}
    dist.init_process_group("nccl", init_method="env://", rank=rank, world_size=args.ranks, **kw)
    try:
        (collective if args.command == "collective" else ddp)(rank, args.ranks, args, dev)
    finally:
        dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collective", help="nccl-tests-style bandwidth of NCCL collectives")
    c.add_argument("--ops", default=",".join(OPS))
    c.add_argument("--min-bytes", type=int, default=8)
    c.add_argument("--max-bytes", type=int, default=1 << 30)
    c.add_argument("--dtype", default="fp32", choices=list(DTYPES))
    c.add_argument("--iters", type=int, default=20)
    c.add_argument("--warmup", type=int, default=5)
    d = sub.add_parser("ddp", help="DistributedDataParallel training throughput")
    d.add_argument("--model", default="resnet50")
    d.add_argument("--batch", type=int, default=256, help="per rank")
    d.add_argument("--precision", default="bf16", choices=["fp32", "tf32", "fp16", "bf16"])
    d.add_argument("--channels-last", action="store_true")
    d.add_argument("--cudnn-benchmark", action="store_true")
    d.add_argument("--iters", type=int, default=30)
    d.add_argument("--warmup", type=int, default=10)
    for s in (c, d):
        s.add_argument("--ranks", type=int, default=None, help="GPUs (default: all)")
    args = p.parse_args()
    if args.command == "collective":
        bad = set(args.ops.split(",")) - set(OPS)
        if bad or args.min_bytes < 1 or args.max_bytes < args.min_bytes:
            p.error(f"--ops must be among {','.join(OPS)}, 1 <= --min-bytes <= --max-bytes")
    gpus = torch.cuda.device_count()
    args.ranks = args.ranks or gpus
    if not 1 <= args.ranks <= gpus:
        sys.exit(f"distributed.py: --ranks {args.ranks}, but {gpus} CUDA devices are visible")
    for name, value in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                        ("NVSHMEM_DISABLE_NVLS", "1")):
        os.environ.setdefault(name, value)
    with socket.socket() as s:  # a free port for the TCP store
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    mp.spawn(worker, args=(args,), nprocs=args.ranks, join=True)


if __name__ == "__main__":
    main()
