"""gpubench's built-in models in Python: the twins of worker/engine/models.cc.

The same layers, shapes and parameter counts as the C++ models, so that a
workload compiled here (AOTInductor, `--execution aot`: aot.py) or run by the
Python reference (bench/reference/reference.py) is the network gpubench
measures in eager mode. tests/worker/aot_test.cc checks the parameter counts,
the defaults, and the outputs on the C++ models' own weights (check.py).

  gpubench_models.defaults  the workloads' default parameters (no torch)
  gpubench_models.models    the models (torch)
  gpubench_models.aot       the AOTInductor compiler gpubench-worker runs
  gpubench_models.check     a twin against a C++ model's saved weights and output
"""
