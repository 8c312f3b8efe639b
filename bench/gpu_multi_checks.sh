#!/bin/bash
# Issue 29's checks on a multi-GPU host, beside bench/gpu_multi.sh's figures:
#   overlap   ddp resnet50 bs256/rank bf16 cl on every GPU with the gradients in
#             25 MiB buckets during backward (the default) and in one message
#             after it (--ddp-bucket-mb 0), alternated A B A B
#   crash     a rank crashing mid-sweep on NCCL (rank 1, at batch 8): that run
#             fails naming the rank, the next point runs, no worker is left
#   listen    what the workers listen on during a ddp run on every GPU (/proc):
#             c10d's store on 127.0.0.1 only, NCCL's bootstrap on the interface
#             NCCL_SOCKET_IFNAME names (lo here, as docs/multi-gpu.md advises)
#   foreign   a cuda:all inference job while a foreign process (PyTorch in
#             python3, CUDA_VISIBLE_DEVICES=1, waiting without spinning)
#             computes on cuda:1: that lane reads contended, the others not;
#             and every lane of the same job alone: none does
#   ownranks  ddp and a collective on every GPU alone: no run contended
# Usage, in the checkout root after deploy/build.sh --bundle DIR -DCMAKE_BUILD_TYPE=Release:
#   OUT=/tmp/checks [PASSES=2] bash bench/gpu_multi_checks.sh [ownranks] [foreign] [overlap] [crash] [listen]
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon
parts=${*:-ownranks foreign overlap crash listen}
RANKS=${RANKS:-$(nvidia-smi -L 2>/dev/null | wc -l)}
short="--warmup 5 --min-time-ms 1000 --max-time-ms 4000"
ddp=(--workload ddp --ddp-model resnet50 --mode train --device cuda --batch 256 --precision bf16
     --channels-last true --cudnn-benchmark true --world-size "$RANKS")
# Runs a job to its end: its table in $OUT/NAME.txt, its JSON in $OUT/NAME.json.
job() {  # name flags...
  local name=$1 id
  shift
  id=$("$B/gpubench" submit "$@" 2> "$OUT/$name.err") || { cat "$OUT/$name.err"; return 1; }
  "$B/gpubench" watch "$id" > "$OUT/$name.txt" 2>&1
  "$B/gpubench" show "$id" --output json > "$OUT/$name.json" 2>> "$OUT/$name.err"
}
# One line a run: config, state, samples/s, contention (from the JSON).
runs() {  # name
  python3 - "$OUT/$1.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d.get("runs", []):
    res = r.get("result", {})
    c = res.get("contention", {})
    print(f"  {r.get('config', {}).get('device', ''):8} {r.get('state', '')[10:]:10} "
          f"{res.get('throughputSamplesPerS', res.get('throughput_samples_per_s', 0)):12.1f} "
          f"devices={','.join(res.get('rankDevices', res.get('rank_devices', [])) or [res.get('resolvedDevice', res.get('resolved_device', ''))])} "
          f"contended={c.get('contended', False)} other_cpu_cores={c.get('otherCpuCores', c.get('other_cpu_cores', 0)):.2f} "
          f"gpu_processes={c.get('gpuProcesses', c.get('gpu_processes', 0))} "
          f"error={r.get('error', '')[:160]}")
PY
}
workers_left() { pgrep -c -f gpubench-worker || true; }

nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c
echo "RANKS=$RANKS"
for part in $parts; do
  echo "== $part"
  case $part in
  overlap)
    start_daemon "${PORT:-50091}" || exit 1
    for pass in $(seq "${PASSES:-2}"); do
      job "bucketed_$pass" "${ddp[@]}" $short; runs "bucketed_$pass"
      job "flat_$pass" "${ddp[@]}" --ddp-bucket-mb 0 $short; runs "flat_$pass"
    done
    kill -TERM $daemon; wait $daemon 2>/dev/null
    ;;
  crash)
    GPUBENCH_INJECT_CRASH_AT_BATCH=8 GPUBENCH_INJECT_CRASH_RANK=1 start_daemon "${PORT:-50092}" ||
      exit 1
    job crash --workload ddp --ddp-model mlp --mode train --device cuda --world-size 2 \
      --batch 8,16 $short; runs crash
    kill -TERM $daemon; wait $daemon 2>/dev/null
    echo "  workers left: $(workers_left)"
    ;;
  listen)
    NCCL_SOCKET_IFNAME=lo start_daemon "${PORT:-50093}" || exit 1
    "$B/gpubench" submit "${ddp[@]}" --warmup 5 --min-time-ms 8000 --max-time-ms 8000 \
      > "$OUT/listen.id" 2> "$OUT/listen.err"
    sleep 12  # the ranks are up and training
    echo "  workers: $(pgrep -f gpubench-worker | paste -sd, -)"
    # Listening TCP sockets of the workers, from /proc (no ss needed).
    python3 - $(pgrep -f gpubench-worker) <<'PY'
import glob, os, socket, struct, sys
inodes = set()
for pid in sys.argv[1:]:
    for fd in glob.glob(f"/proc/{pid}/fd/*"):
        try:
            link = os.readlink(fd)
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
seen = {}
for table, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
    for line in open(table).readlines()[1:]:
        f = line.split()
        if f[3] != "0A" or f[9] not in inodes:  # 0A: LISTEN
            continue
        addr, port = f[1].split(":")
        raw = bytes.fromhex(addr)
        if family == socket.AF_INET6:
            raw = b"".join(struct.pack("<I", w) for w in struct.unpack(">4I", raw))
        else:
            raw = struct.pack("<I", int(addr, 16))
        host = socket.inet_ntop(family, raw)
        seen[host] = seen.get(host, 0) + 1
for host, n in sorted(seen.items()):
    print(f"  listening on {host}: {n} socket(s)")
if not seen:
    print("  listening: none found")
PY
    "$B/gpubench" watch "$(cat "$OUT/listen.id")" > "$OUT/listen.txt" 2>&1
    kill -TERM $daemon; wait $daemon 2>/dev/null
    ;;
  foreign)
    start_daemon "${PORT:-50094}" || exit 1
    r50=(--workload resnet50 --device cuda:all --mode infer --batch 256 --precision fp16
         --channels-last true $short)
    job alone "${r50[@]}"; runs alone
    # Only on cuda:1, and waiting without spinning a core: the GPU is what
    # it takes.
    CUDA_VISIBLE_DEVICES=1 python3 -c "
import time, torch
x = torch.randn(8192, 8192, device='cuda')
done = torch.cuda.Event(blocking=True)
end = time.time() + 30
while time.time() < end:
    for _ in range(10):
        x @ x
    done.record()
    done.synchronize()
" > "$OUT/foreign.log" 2>&1 &
    foreign=$!
    sleep 8  # its CUDA context is up and it computes
    job beside_foreign "${r50[@]}"; runs beside_foreign
    kill $foreign 2>/dev/null; wait $foreign 2>/dev/null
    kill -TERM $daemon; wait $daemon 2>/dev/null
    ;;
  ownranks)
    start_daemon "${PORT:-50095}" || exit 1
    job own_ddp "${ddp[@]}" $short; runs own_ddp
    job own_collective --workload collective --device cuda --world-size "$RANKS" \
      --collective-op all_reduce --collective-bytes 1048576,268435456 $short; runs own_collective
    kill -TERM $daemon; wait $daemon 2>/dev/null
    ;;
  esac
done
