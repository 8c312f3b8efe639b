#!/bin/bash
# Installs, builds (deploy/build.sh; FLAVOUR=debian or wheel), installs the
# tools only the tests use, and runs the test suite with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
# TESTS=torch or worker: only the tests that depend on this flavour's LibTorch
# (tests/CMakeLists.txt, GPUBENCH_TESTS); all by default.
build=$(./deploy/build.sh "-DGPUBENCH_TESTS=${TESTS:-all}")
# What only the tests use, installed here rather than by the build: chromium
# renders the HTML report (report_test); zsh loads the completion script
# (cli_test); Python's grpcio with the standard health and reflection
# packages is a client that is not ours (standard_services_test); prometheus
# (with promtool) scrapes the daemon and lints its metrics (http_front_test,
# metrics_test); Google Benchmark's compare.py (libbenchmark-tools, run by
# Debian's python3 with python3-scipy) reads the gbench export (cli_test);
# kubernetes-validate checks deploy/k8s against Kubernetes' schemas;
# postgresql is the server `export --to` loads and DuckDB (duckdb) reads
# the JSON Lines export (cli_export_test); apache-otava finds change points
# beside gpubench's (change_points_test); HolisticTraceAnalysis reads the
# traces gpubench explain does (hta_agreement.py).
SUDO=$([ "$(id -u)" = 0 ] && echo "" || echo sudo)
missing=$(for p in chromium zsh prometheus libbenchmark-tools python3-scipy postgresql; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
if [ -n "$missing" ]; then
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q $missing >&2
fi
python3 -c 'import grpc, grpc_health.v1, grpc_reflection.v1alpha' 2>/dev/null ||
  python3 -m pip install -q grpcio==1.85.1 grpcio-health-checking==1.85.1 \
    grpcio-reflection==1.85.1 >&2
python3 -c 'import duckdb' 2>/dev/null || python3 -m pip install -q duckdb==2.0.1 >&2
# Apache Otava, the change-point peer (change_points_test).
python3 -c 'import otava.analysis' 2>/dev/null || python3 -m pip install -q apache-otava==0.8.0 >&2
# Meta's Holistic Trace Analysis, the trace-breakdown peer (hta_agreement.py):
# without its notebook dependencies (jupyterlab), which it does not import.
python3 -c 'import hta.trace_analysis' 2>/dev/null || {
  python3 -m pip install -q --no-deps HolisticTraceAnalysis==0.5.0 >&2
  python3 -m pip install -q pandas==2.3.3 plotly==7.1.0 psutil==7.2.2 networkx==3.6.1 \
    pydot==4.0.1 PyYAML==6.0.3 >&2
}
# Kubernetes' schemas for the DaemonSet (k8s_test.py).
command -v kubernetes-validate >/dev/null ||
  python3 -m pip install -q kubernetes-validate==1.37.0 >&2
# The wheel's LibTorch and the NVIDIA libraries it maps run to gigabytes;
# after a build has pushed them out of the page cache, the first workers
# read their pages from disk (19 s for one seen here) inside the tests'
# time bounds. Read them once first.
if [ "${FLAVOUR:-debian}" = wheel ]; then
  site=$(python3 -c 'import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))' 2>/dev/null)
  cat "$site"/torch/lib/*.so* "$site"/nvidia/*/lib/*.so* > /dev/null 2>&1 || true
fi
cd "$build" && ctest --output-on-failure
