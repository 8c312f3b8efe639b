"""The workloads' default parameters: the registry's entries (common/workloads/NAME.cc)
(tests/worker/aot_test checks the two agree). Torch-free."""

DEFAULTS = {
    "mlp": {"model_size": "small", "image_size": 32, "num_classes": 10},
    "simple_cnn": {"model_size": "small", "image_size": 32, "num_classes": 10},
    "resnet18": {"image_size": 224, "num_classes": 1000},
    "resnet50": {"image_size": 224, "num_classes": 1000},
    "unet": {"image_size": 128, "num_classes": 3},
    "bilstm": {"sequence_length": 256, "num_classes": 3, "vocab_size": 128},
    "cnn_lstm": {"sequence_length": 16, "image_size": 64, "num_classes": 10},
    "transformer": {"sequence_length": 512, "num_layers": 6, "hidden_size": 512,
                    "num_heads": 8, "num_classes": 10, "vocab_size": 32000},
}

_UNSET = {"model_size": "", "image_size": 0, "num_classes": 0, "sequence_length": 0,
          "num_layers": 0, "hidden_size": 0, "num_heads": 0, "decoder": 0, "vocab_size": 0}


def params(workload, **overrides):
    """Every model parameter of workload: its defaults, then overrides."""
    p = dict(_UNSET)
    p.update(DEFAULTS.get(workload, {}))
    p.update({k: v for k, v in overrides.items() if v is not None})
    return p
