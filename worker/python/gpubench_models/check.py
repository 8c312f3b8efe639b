"""Checks a Python twin against its C++ model on the C++ model's own weights.

  python3 -m gpubench_models.check CHECKPOINT --workload W [the model arguments of aot.py]

CHECKPOINT is what the engine's SaveModelCheckpoint wrote: every parameter
and buffer by module name, "__input__" and "__output__". The twin loads the
weights strictly (every name and shape must match), runs the input in eval
mode, and must give the C++ output. Prints one JSON line with the largest
absolute difference; exit 1 when the outputs differ.
"""
import json
import sys

import torch
import torch.jit._pickle  # restore_type_tag, which LibTorch's pickles name

from . import aot, models


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    path, a = argv[0], aot.parse_args(argv[1:])
    # LibTorch's pickle_save tags its dict's types; the loader stays weights-only.
    with torch.serialization.safe_globals([torch.jit._pickle.restore_type_tag]):
        tensors = dict(torch.load(path))
    x, expected = tensors.pop("__input__"), tensors.pop("__output__")
    model = models.create(a.workload, aot.params_of(a)).eval()
    model.load_state_dict(tensors, strict=True)
    with torch.no_grad():
        got = model(x)
    diff = (got - expected).abs().max().item()
    ok = got.shape == expected.shape and torch.allclose(got, expected, rtol=1e-4, atol=1e-5)
    print(json.dumps({"workload": a.workload, "max_abs_diff": diff, "ok": bool(ok),
                      "tensors": len(tensors)}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
