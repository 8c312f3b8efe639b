#!/usr/bin/env python3
"""Checks ARCHITECTURE.md's layer rules: which project headers each part of
the tree may include. Prints every violation and exits 1 if there is one.

Usage: check_layers.py [SOURCE_ROOT]
"""
import os
import re
import sys

# (files under this path, the include prefixes they may use), most specific
# first. "gpubench/" is the generated protobuf code. The build enforces the
# same through each library's include root (tests/architecture/CMakeLists.txt
# probes it); this check also covers the files of a library among
# themselves.
RULES = [
    ("worker/engine/", ["worker/engine/", "common/stats.h", "common/workload_registry.h",
                        "common/model_cost.h", "common/gpu_peaks.h", "launcher/telemetry.h",
                        "launcher/fingerprint.h", "worker/measure.h", "worker/profile_table.h",
                        "worker/serve.h"]),
    ("worker/measure.", ["worker/measure.h", "common/stats.h"]),
    ("worker/serve.", ["worker/serve.h", "common/stats.h"]),
    ("worker/heartbeat.", ["worker/heartbeat.h", "worker/measure.h"]),
    ("worker/profile_table.", ["worker/profile_table.h"]),
    ("worker/", ["worker/", "launcher/", "common/", "gpubench/"]),
    # The telemetry library (NVML, sampling, the fingerprint): no protobuf.
    ("launcher/telemetry.", ["launcher/telemetry.h", "launcher/nvml.h"]),
    ("launcher/nvml.", ["launcher/nvml.h"]),
    ("launcher/fingerprint.", ["launcher/fingerprint.h", "launcher/nvml.h"]),
    ("launcher/cpu_cores.", ["launcher/cpu_cores.h", "launcher/fingerprint.h"]),
    ("launcher/", ["launcher/", "common/", "gpubench/"]),
    ("common/workload", ["common/workload", "common/model_cost.h"]),
    ("common/model_cost.", ["common/model_cost.h", "common/workload_registry.h"]),
    ("common/gpu_peaks.", ["common/gpu_peaks.h"]),
    ("common/", ["common/", "gpubench/"]),
    ("storage/", ["storage/", "common/", "gpubench/"]),
    ("server/", ["server/", "storage/", "report/", "launcher/", "common/", "gpubench/"]),
    ("report/", ["report/", "common/", "gpubench/"]),
    ("client/", ["client/", "report/", "common/", "gpubench/"]),
]
PROJECT_DIRS = ("client/", "report/", "common/", "server/", "storage/", "worker/", "launcher/",
                "gpubench/",
                "tests/", "bench/")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../..")
    violations = []
    checked = 0
    for top in ("client", "report", "common", "server", "storage", "worker", "launcher"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith((".h", ".cc")):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), root)
                allowed = next(a for prefix, a in RULES if path.startswith(prefix))
                checked += 1
                with open(os.path.join(root, path), encoding="utf-8") as f:
                    for header in INCLUDE.findall(f.read()):
                        if not header.startswith(PROJECT_DIRS):
                            continue  # absl/, google/, a system header
                        if not header.startswith(tuple(allowed)):
                            violations.append(f"{path} includes {header}; it may include "
                                              f"{', '.join(allowed)}")
    for v in violations:
        print(v)
    print(f"{checked} files checked, {len(violations)} layer violations")
    return 1 if violations or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
