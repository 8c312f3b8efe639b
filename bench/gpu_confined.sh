#!/bin/bash
# Issue 28 on a GPU host: workers confined (Landlock, no_new_privs, no execve)
# run the GPU workloads, telemetry, the profiler, CUDA graphs, execution aot,
# a one-rank NCCL group and a user's TorchScript model; a hostile TorchScript
# model reads nothing; and resnet50 infer bs256 fp16 eager runs as fast
# confined as unconfined (A B A B, each a fresh worker).
# Usage, in the checkout root with the bundle (deploy/bundle.sh here):
#   OUT=/tmp/confined bash bench/gpu_confined.sh            (builds build-bundle first)
#   BUILD=build-wheel ... after FLAVOUR=wheel deploy/build.sh
#   WORKER_USER=nobody ...  the confined workers also run as that user (a root daemon)
set -uo pipefail
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
if [ "${BUILD:-build-bundle}" = build-bundle ] && [ -z "${SKIP_BUILD:-}" ]; then
  start=$(date +%s)
  bash deploy/build.sh --bundle "${BUNDLE:-bundle}" -DCMAKE_BUILD_TYPE=Release \
    > "$OUT/build.log" 2>&1
  echo "build: exit $? in $(( $(date +%s) - start )) s"
fi
# A worker user must pass every folder down to the data directory: not
# under a 0700 /root.
export DATA=${DATA:-${WORKER_USER:+/var/tmp/gpubench-confined/data}}
DATA=${DATA:-$OUT/data}
rm -rf "$DATA" "$OUT/data2"
mkdir -p -m 755 "$(dirname "$DATA")"
echo "== gpubenchd --check-confinement"
USER_ARGS=${WORKER_USER:+--worker-user $WORKER_USER}
"$B/gpubenchd" --data-dir "$DATA" $USER_ARGS --check-confinement 2>&1 | tee "$OUT/check.txt"
echo "check exit ${PIPESTATUS[0]}"

# A user's model, and a hostile one that tries to read /etc/shadow.
cat > "$OUT/models.py" <<'PY'
import sys, torch
out = sys.argv[1]
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(1024, 4096)
        self.b = torch.nn.Linear(4096, 1024)
    def forward(self, x):
        return self.b(torch.relu(self.a(x)))
torch.jit.script(Net()).save(f"{out}/user.pt")
class Hostile(torch.nn.Module):
    def forward(self, x):
        t = torch.from_file("/etc/shadow", False, 16, dtype=torch.uint8)
        return x + t.sum().float()
torch.jit.script(Hostile()).save(f"{out}/hostile.pt")
PY
python3 "$OUT/models.py" "$OUT"  # torch.jit.script reads the classes' source from a file

common=(--warmup 5 --min-iterations 50 --min-time-ms 2000 --max-time-ms 8000)
r50=(--workload resnet50 --device cuda --mode infer --batch 256 --precision fp16
     --channels-last true "${common[@]}")
DAEMON_ARGS="--model-root $OUT $USER_ARGS" start_daemon "${PORT:-50078}" || exit 1
"$B/gpubench" hosts | grep -i -E "confinement|gpu" | tee "$OUT/hosts.txt"
submit() {  # name, args...
  local name=$1; shift
  "$B/gpubench" submit --wait --name "$name" "$@" > "$OUT/$name.txt" 2>&1
  echo "$name: exit $?"
}
submit r50_confined_1 "${r50[@]}"
echo '{"profiling": {"enabled": true, "iterations": 5, "top_operators": 8}}' > "$OUT/profiled.json"
submit graph_profiled "$OUT/profiled.json" --workload resnet50 --device cuda --mode train \
  --batch 32 --precision fp16 --channels-last true --execution cuda_graph "${common[@]}"
submit aot_mlp --workload mlp --device cuda --mode infer --batch 16 --execution aot "${common[@]}"
submit aot_r50 "${r50[@]}" --execution aot
submit ddp_one_rank --workload ddp --ddp-model mlp --world-size 1 --device cuda --batch 64 \
  --mode train "${common[@]}"
for m in user hostile; do
  printf '{"base": {"workload": "torchscript", "params": {"model_path": "%s", %s}}}' \
    "$OUT/$m.pt" '"inputs": [{"shape": [64, 1024]}]' > "$OUT/$m.json"
  submit ${m}_model "$OUT/$m.json" --device cuda --batch 64 --mode infer "${common[@]}"
done
kill -TERM $daemon; wait $daemon 2>/dev/null
# The same daemon's data, unconfined, and confined again: A B A B.
DATA="$OUT/data2" DAEMON_ARGS="--confine-workers=false" start_daemon "$(( ${PORT:-50078} + 1 ))"
submit r50_unconfined_1 "${r50[@]}"
kill -TERM $daemon; wait $daemon 2>/dev/null
DAEMON_ARGS="$USER_ARGS" start_daemon "${PORT:-50078}"
submit r50_confined_2 "${r50[@]}"
kill -TERM $daemon; wait $daemon 2>/dev/null
DATA="$OUT/data2" DAEMON_ARGS="--confine-workers=false" start_daemon "$(( ${PORT:-50078} + 1 ))"
submit r50_unconfined_2 "${r50[@]}"
kill -TERM $daemon; wait $daemon 2>/dev/null
trap - EXIT
echo "== scratch folders left: $(ls "$DATA/work" "$OUT/data2/work" 2>/dev/null | grep -c worker-)"
echo "== the jobs (throughput samples/s, state, error)"
for f in r50_confined_1 r50_unconfined_1 r50_confined_2 r50_unconfined_2 graph_profiled \
         aot_mlp aot_r50 ddp_one_rank user_model hostile_model; do
  printf '%-18s ' "$f"
  grep -E "succeeded|failed|error" "$OUT/$f.txt" | grep -v "^job" | head -2 | tr -s ' ' | tr '\n' ' '
  echo
done
for f in aot_mlp aot_r50; do
  echo "== $f's output"
  tail -c 1200 "$OUT/$f.txt"
done
