#!/bin/bash
# gpubench explain's memory on large traces (issue 48: traces of 256 MiB in
# bounded memory): writes a Kineto-form trace of N launches (a
# cudaLaunchKernel and its kernel each; 780,000 make 325 MiB), then prints
# the peak RSS and wall time of `gpubench explain` on it, and of Holistic
# Trace Analysis' temporal breakdown on one a tenth the size (HTA=1).
# Usage: [BUILD=build] [N=780000] [HTA=1] bash bench/explain_memory.sh
set -uo pipefail
B=${BUILD:-build}/bin
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
write() {  # FILE N
  python3 - "$1" "$2" << 'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write('{"schemaVersion": 1, "traceEvents": [\n'
            '{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "gpu"}}')
    t = 1712195495505000.0
    for i in range(int(sys.argv[2])):
        c = 100 + i
        f.write(f',\n{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, '
                f'"tid": 1, "ts": {t:.3f}, "dur": 4.125, "args": {{"correlation": {c}, "cbid": 211}}}}')
        f.write(f',\n{{"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise'
                f'_kernel<4, at::native::AddFunctor<float>>", "pid": 0, "tid": 7, "ts": {t + 6.5:.3f}, '
                f'"dur": 2.750, "args": {{"stream": 7, "correlation": {c}, "device": 0, '
                f'"grid": [1024, 1, 1]}}}}')
        t += 9.25
    f.write("\n]}\n")
PY
}
peak() {  # LABEL FILE, then the command
  local label=$1 file=$2
  shift 2
  /usr/bin/time -f "%M %e" -o "$dir/time" "$@" > /dev/null 2>&1 || echo "$label: exit $?"
  read -r kb s < "$dir/time"
  printf '%-38s trace %6.1f MiB  peak RSS %7.1f MiB  %6.2f s\n' "$label" \
    "$(echo "$(stat -c %s "$file") / 1048576" | bc -l)" "$(echo "$kb / 1024" | bc -l)" "$s"
}
N=${N:-780000}
write "$dir/big.json" "$N"
peak "gpubench explain" "$dir/big.json" "$B/gpubench" explain "$dir/big.json"
write "$dir/tenth.json" $((N / 10))
peak "gpubench explain (a tenth)" "$dir/tenth.json" "$B/gpubench" explain "$dir/tenth.json"
if [ "${HTA:-1}" = 1 ]; then
  peak "HTA get_temporal_breakdown (a tenth)" "$dir/tenth.json" python3 -c "
from hta.trace_analysis import TraceAnalysis
TraceAnalysis(trace_files={0: '$dir/tenth.json'}, trace_dir='').get_temporal_breakdown(visualize=False)"
fi
