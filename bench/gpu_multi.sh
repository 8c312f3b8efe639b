#!/bin/bash
# Issue 20's side by side on one multi-GPU host: gpubench's `collective` and
# `ddp` workloads through the real daemon and CLI (gpubenchd on loopback,
# gpubench submit, a gpubench-worker per rank) against plain PyTorch
# torch.distributed on the same GPUs (bench/reference/distributed.py, one
# process per GPU), one after the other, never at the same time:
#   collective  all_reduce, all_gather, reduce_scatter, broadcast on RANKS GPUs,
#               fp32, every power of two from MIN_BYTES to MAX_BYTES, nccl-tests'
#               sizes, algbw and busbw: gpubench's table, Python's CSV, and the
#               two side by side per op and size
#   ddp         resnet50 training, batch 256 per rank, bf16, channels_last, cuDNN
#               benchmark, on 1, 2, 4, 8 GPUs (those <= RANKS): samples/s of all ranks
# then a short table: all_reduce busbw at MAX_BYTES (goal: gpubench/python >= 0.95)
# and ddp samples/s at each K (goal: ratio >= 1.0, and gpubench's scaling
# efficiency T_K/(K*T_1) >= 0.90 at K=4).
# Usage, in the checkout root of a multi-GPU host after deploy/build.sh --bundle DIR
#   -DCMAKE_BUILD_TYPE=Release (torch and torchvision in python3 for the reference):
#   OUT=/tmp/multi bash bench/gpu_multi.sh [collective] [ddp]   (default: both)
# Environment: RANKS (default: every GPU, nvidia-smi -L), MAX_BYTES (1073741824),
# MIN_BYTES (8, raised to 4*RANKS: all_gather and reduce_scatter need whole
# fp32 elements per rank), OPS (the four; all_reduce,broadcast where RANKS is
# not a power of two), DDP_SIZES (1,2,4,8), SHORT (gpubench's measurement flags,
# "--warmup 5 --min-time-ms 300 --max-time-ms 2000"), PY_COLL ("--iters 50
# --warmup 5") and PY_DDP ("--iters 30 --warmup 10") for the reference, PORT.
# Logs, gpubench's JSON and the reference's CSV go to $OUT.
set -uo pipefail
# NVLink SHARP (multicast) stays off on both sides.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon
parts=${*:-collective ddp}
RANKS=${RANKS:-$(nvidia-smi -L 2>/dev/null | wc -l)}
if ! [ "$RANKS" -ge 1 ] 2>/dev/null; then
  echo "RANKS: no GPUs (nvidia-smi -L lists none)" >&2
  exit 1
fi
MAX_BYTES=${MAX_BYTES:-1073741824}
MIN_BYTES=${MIN_BYTES:-8}
while [ "$MIN_BYTES" -lt $((4 * RANKS)) ]; do MIN_BYTES=$((MIN_BYTES * 2)); done
if (( (RANKS & (RANKS - 1)) == 0 )); then
  OPS=${OPS:-all_reduce,all_gather,reduce_scatter,broadcast}
else  # no power of two splits into RANKS whole elements
  OPS=${OPS:-all_reduce,broadcast}
fi
DDP_SIZES=$(echo "${DDP_SIZES:-1,2,4,8}" | tr , '\n' | awk -v r="$RANKS" '$1 >= 1 && $1 <= r' |
            paste -sd, -)
short=${SHORT:-"--warmup 5 --min-time-ms 300 --max-time-ms 2000"}
PY_COLL=${PY_COLL:-"--iters 50 --warmup 5"}
PY_DDP=${PY_DDP:-"--iters 30 --warmup 10"}
start_daemon "${PORT:-50086}" || exit 1
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1
python3 -c "import torch; print('python torch', torch.__version__, 'NCCL',
            '.'.join(map(str, torch.cuda.nccl.version())), torch.cuda.device_count(), 'GPUs')"
echo "RANKS=$RANKS MAX_BYTES=$MAX_BYTES MIN_BYTES=$MIN_BYTES OPS=$OPS DDP_SIZES=$DDP_SIZES"

# Reads `gpubench show JOB --output json` ({"job", "runs": [Run]}, proto field
# names) and the reference's CSV. Run fields used: state (RUN_STATE_SUCCEEDED),
# config.world_size, config.params.collective_op (COLLECTIVE_OP_ALL_REDUCE...),
# config.params.collective_bytes (int64: a JSON string), result.throughput_samples_per_s
# (collective: operations/s; ddp: samples/s of all ranks),
# result.algorithm_bandwidth_gb_per_s, result.bus_bandwidth_gb_per_s.
compare=$(cat <<'EOF'
import json, sys
OPS = ["all_reduce", "all_gather", "reduce_scatter", "broadcast"]

def field(m, name):  # the CLI prints proto field names; lowerCamelCase too
    camel = name.split("_")[0] + "".join(w.title() for w in name.split("_")[1:])
    return m.get(name, m.get(camel, 0))

def runs(path):
    try:
        d = json.load(open(path))
    except (OSError, ValueError):
        return []
    return [r for r in d.get("runs", []) if r.get("state") == "RUN_STATE_SUCCEEDED"]

def rows(path):
    try:
        return [l.strip().split(",") for l in open(path) if l.count(",") >= 4]
    except OSError:
        return []

def ratio(a, b):
    return f"{a / b:.3f}" if a and b else "-"

def collectives(path):  # (op, bytes, ranks): (time_us, algbw, busbw)
    out = {}
    for r in runs(path):
        c, p, res = r.get("config", {}), r.get("config", {}).get("params", {}), r.get("result", {})
        op = str(field(p, "collective_op") or "COLLECTIVE_OP_ALL_REDUCE")
        op = op.replace("COLLECTIVE_OP_", "").lower()
        ops_s = field(res, "throughput_samples_per_s")
        out[op, int(field(p, "collective_bytes")), int(field(c, "world_size") or 1)] = (
            1e6 / ops_s if ops_s else 0, field(res, "algorithm_bandwidth_gb_per_s"),
            field(res, "bus_bandwidth_gb_per_s"))
    return out

def py_collectives(path):
    return {(f[0], int(f[1]), int(f[2])): tuple(map(float, f[3:6]))
            for f in rows(path) if f[0] in OPS and f[1].isdigit()}

def ddp(path):
    return {int(field(r.get("config", {}), "world_size") or 1):
            field(r.get("result", {}), "throughput_samples_per_s") for r in runs(path)}

def py_ddp(path):
    return {int(f[2]): float(f[4]) for f in rows(path) if f[0] == "ddp" and f[2].isdigit()}

mode, out = sys.argv[1], sys.argv[2]
if mode == "collective":
    g = collectives(f"{out}/collective.gpubench.json")
    p = py_collectives(f"{out}/collective.python.csv")
    print(f"{'op':15} {'bytes':>11} {'K':>2} {'gpb us':>10} {'py us':>10} "
          f"{'gpb algbw':>9} {'py algbw':>9} {'gpb busbw':>9} {'py busbw':>9} {'ratio':>6}")
    for key in sorted(set(g) | set(p), key=lambda k: (OPS.index(k[0]), k[1], k[2])):
        gv, pv = g.get(key, (0, 0, 0)), p.get(key, (0, 0, 0))
        by = 2 if gv[2] and pv[2] else 1  # busbw; algbw where K=1 makes busbw 0
        print(f"{key[0]:15} {key[1]:11} {key[2]:2} {gv[0]:10.2f} {pv[0]:10.2f} {gv[1]:9.2f} "
              f"{pv[1]:9.2f} {gv[2]:9.2f} {pv[2]:9.2f} {ratio(gv[by], pv[by]):>6}")
    sys.exit(0)
max_bytes, ranks = int(sys.argv[3]), int(sys.argv[4])
print(f"{'case':40} {'gpubench':>10} {'python':>10} {'ratio':>7} {'eff':>6}  goal")
g = collectives(f"{out}/collective.gpubench.json")
p = py_collectives(f"{out}/collective.python.csv")
key = ("all_reduce", max_bytes, ranks)
if key in g or key in p:
    by, unit = (2, "busbw") if ranks > 1 else (1, "algbw")
    gv, pv = g.get(key, (0, 0, 0))[by], p.get(key, (0, 0, 0))[by]
    print(f"{f'all_reduce {max_bytes} B K={ranks} {unit} GB/s':40} {gv:10.2f} {pv:10.2f} "
          f"{ratio(gv, pv):>7} {'-':>6}  ratio >= 0.95")
for op in OPS:  # issue 29's goals at every size: busbw from 1 MiB, time below it
    keys = [k for k in set(g) & set(p) if k[0] == op and k[2] == ranks and g[k][0] and p[k][0]]
    big = [g[k][2] / p[k][2] for k in keys if k[1] >= 1 << 20 and p[k][2]]
    small = [g[k][0] / p[k][0] for k in keys if k[1] < 1 << 20]
    if big:
        print(f"{f'{op} busbw, worst size from 1 MiB':40} {'':10} {'':10} {min(big):7.3f} "
              f"{'-':>6}  ratio >= 0.95")
    if small:
        print(f"{f'{op} us/op, worst size below 1 MiB':40} {'':10} {'':10} {max(small):7.3f} "
              f"{'-':>6}  gpubench/python <= 1.0")
g, p = ddp(f"{out}/ddp.gpubench.json"), py_ddp(f"{out}/ddp.python.csv")
for k in sorted(set(g) | set(p)):
    gv, pv = g.get(k, 0), p.get(k, 0)
    eff = f"{gv / (k * g[1]):.3f}" if g.get(1) and gv else "-"
    goal = "ratio >= 1.0" + {4: ", eff >= 0.90", 8: ", eff >= 0.85"}.get(k, "")
    print(f"{f'ddp resnet50 bs256/rank bf16 K={k} samp/s':40} {gv:10.1f} {pv:10.1f} "
          f"{ratio(gv, pv):>7} {eff:>6}  {goal}")
EOF
)

# Submits a job, follows it (its table to stdout and $OUT/NAME.gpubench.txt)
# and keeps its JSON in $OUT/NAME.gpubench.json.
gpubench_job() {  # name flags...
  local name=$1 job
  shift
  rm -f "$OUT/$name.gpubench.json"
  job=$("$B/gpubench" submit "$@" 2>> "$OUT/$name.err")
  if [ -z "$job" ]; then
    echo "gpubench submit failed; see $OUT/$name.err" >&2
    return 1
  fi
  echo "gpubench job $job"
  "$B/gpubench" watch "$job" 2>> "$OUT/$name.err" | tee "$OUT/$name.gpubench.txt"
  "$B/gpubench" show "$job" --output json > "$OUT/$name.gpubench.json" 2>> "$OUT/$name.err"
}

for part in $parts; do
  echo "== $part"
  case $part in
  collective)
    gpubench_job collective --workload collective --device cuda --world-size "$RANKS" \
      --collective-op "$OPS" --collective-bytes "$MIN_BYTES:$MAX_BYTES" --precision fp32 $short
    echo "-- python torch.distributed"
    python3 bench/reference/distributed.py collective --ranks "$RANKS" --ops "$OPS" \
      --min-bytes "$MIN_BYTES" --max-bytes "$MAX_BYTES" --dtype fp32 $PY_COLL \
      2>> "$OUT/collective.python.err" | tee "$OUT/collective.python.csv"
    echo "-- side by side (ratio: gpubench/python busbw; algbw at K=1)"
    python3 -c "$compare" collective "$OUT"
    ;;
  ddp)
    gpubench_job ddp --workload ddp --ddp-model resnet50 --mode train --device cuda \
      --batch 256 --precision bf16 --channels-last true --cudnn-benchmark true \
      --world-size "$DDP_SIZES" $short
    echo "-- python torch.distributed DDP"
    : > "$OUT/ddp.python.csv"
    for k in ${DDP_SIZES//,/ }; do
      python3 bench/reference/distributed.py ddp --ranks "$k" --model resnet50 --batch 256 \
        --precision bf16 --channels-last --cudnn-benchmark $PY_DDP \
        2>> "$OUT/ddp.python.err" | tee -a "$OUT/ddp.python.csv"
    done
    ;;
  *)
    echo "unknown part $part (collective, ddp)" >&2
    ;;
  esac
done

echo
echo "== summary (ratio: gpubench/python; eff: gpubench T_K/(K*T_1))"
python3 -c "$compare" summary "$OUT" "$MAX_BYTES" "$RANKS"
