#!/bin/bash
# A user's own AOTInductor package end to end (issue 18): a small model that
# is not one of gpubench's (defined below) is compiled here with the host's
# Python torch into a .pt2, uploaded with `gpubench model upload` (admin: no
# tokens configured), and run as a torchscript workload by its sha256 on the
# GPU, inference, batch 64. Prints the job's table.
# Usage, in the checkout root of a GPU host after deploy/build.sh --bundle DIR:
#   OUT=/tmp/pt2 bash bench/gpu_pt2_upload.sh
set -uo pipefail
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon
start_daemon "${PORT:-50084}" || exit 1
python3 - "$OUT/user_model.pt2" <<'PY' 2> "$OUT/compile.err"
import sys, torch, torch.nn as nn
class UserNet(nn.Module):  # a user's model: conv, norm, pooling, two heads summed
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 48, 5, 2, 2), nn.GroupNorm(8, 48), nn.SiLU(),
                                  nn.Conv2d(48, 96, 3, 2, 1), nn.SiLU())
        self.a, self.b = nn.Linear(96, 20), nn.Linear(96, 20)
    def forward(self, x):
        h = self.body(x).mean((2, 3))
        return self.a(h) + self.b(h).tanh()
model = UserNet().cuda().eval()
x = torch.randn(64, 3, 96, 96, device="cuda")
with torch.no_grad():
    ep = torch.export.export(model, (x,))
    path = torch._inductor.aoti_compile_and_package(ep, package_path=sys.argv[1])
print("python: wrote", path, flush=True)
PY
echo "python: exit $?"
[ -s "$OUT/user_model.pt2" ] || { tail -5 "$OUT/compile.err"; exit 1; }
"$B/gpubench" model upload "$OUT/user_model.pt2" > "$OUT/upload.txt" 2> "$OUT/upload.err" ||
  { cat "$OUT/upload.err"; exit 1; }
sha=$(head -1 "$OUT/upload.txt" | cut -d' ' -f1)  # "SHA256  FILE (N bytes)"
echo "uploaded sha256 $sha"
cat > "$OUT/spec.json" <<JSON
{"base": {"workload": "torchscript", "mode": "MODE_INFER", "device": "cuda", "batch_size": 64,
          "params": {"model_sha256": "$sha",
                     "inputs": [{"shape": [64, 3, 96, 96], "dtype": "DTYPE_FLOAT32"}]}},
 "measurement": {"warmup_iterations": 10, "min_time_ms": 1000, "max_time_ms": 3000}}
JSON
"$B/gpubench" submit "$OUT/spec.json" --wait 2>&1 | tail -4
