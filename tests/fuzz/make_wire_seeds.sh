#!/bin/bash
# Writes the binary (wire-form) seeds of tests/fuzz/corpus/spec: each is 'W'
# (odd: spec_fuzz reads the rest as a serialized JobSpec) followed by a JobSpec
# that protoc encodes from the text below, or bytes written by hand where text
# format cannot say it (unknown fields, unpacked repeated fields, truncation).
# The JSON seeds (json_*) are written by hand. Run from anywhere; needs protoc.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/tests/fuzz/corpus/spec

seed() {  # seed NAME TEXT_PROTO
  { printf 'W'
    printf '%s\n' "$2" | protoc --proto_path="$root/proto" \
      --encode=gpubench.v1.JobSpec gpubench/v1/spec.proto
  } >"$out/$1"
}

seed wire_minimal 'base { workload: "mlp" }'
seed wire_resnet_sweep '
name: "resnet sweep"
base { workload: "resnet50" mode: MODE_TRAIN device: "cuda:0" }
sweep { batch_size: [32, 64, 128] precision: [PRECISION_FP32, PRECISION_BF16] }
measurement { min_time_ms: 2000 cv_threshold: 0.01 }
labels { key: "team" value: "vision" }'
seed wire_every_field '
name: "every field"
base {
  workload: "transformer"
  params { model_size: "medium" image_size: 224 num_classes: 1000 sequence_length: 512
           num_layers: 6 hidden_size: 512 num_heads: 8 decoder: true vocab_size: 32000
           matmul_m: 4096 matmul_n: 4096 matmul_k: 4096 copy_bytes: 1048576
           copy_direction: COPY_DIRECTION_DEVICE_TO_DEVICE }
  mode: MODE_TRAIN device: "cuda:3" batch_size: 16 precision: PRECISION_BF16
  channels_last: true cudnn_benchmark: true execution: EXECUTION_CUDA_GRAPH
  input_source: INPUT_SOURCE_HOST
  pipeline { loader_threads: 4 pinned_memory: true prefetch_depth: 2
             extra_cost_us_per_sample: 10 non_blocking: true }
  optimizer: OPTIMIZER_SGD learning_rate: 0.01
}
measurement { warmup_iterations: 10 warmup_ms: 500 min_iterations: 50 min_time_ms: 1000
              max_time_ms: 60000 window_iterations: 20 cv_threshold: 0.02 trials: 3
              max_iterations: 100000 seed: 42 }
profiling { enabled: true iterations: 5 record_shapes: true profile_memory: true
            top_operators: 20 }
telemetry { interval_ms: 100 }
priority: 7 timeout_s: 3600
labels { key: "team" value: "nlp" }'
seed wire_torchscript '
base { workload: "torchscript"
       params { model_path: "models/resnet.pt"
                inputs { shape: [8, 3, 224, 224] dtype: DTYPE_UINT8 } } }
sweep { batch_size: [1, 8] }'
# proto3 enums are open: the wire carries numbers no name stands for.
seed wire_unknown_enums '
base { workload: "mlp" precision: 99 params { copy_direction: -1 } }
sweep { mode: [1, 7] execution: [2147483647] }'
# Found by spec_fuzz: each value valid alone, the run they make is not.
seed wire_swept_torchscript_without_model 'sweep { workload: "torchscript" batch_size: [1, 8] }'
seed wire_nan 'base { workload: "mlp" learning_rate: nan } measurement { cv_threshold: nan }'
seed wire_negative_zero_and_inf '
base { workload: "mlp" learning_rate: -0.0 } measurement { cv_threshold: -inf }'
seed wire_huge_numbers '
base { workload: "copy" batch_size: -2147483648
       params { copy_bytes: 9223372036854775807 matmul_m: -9223372036854775808 } }
measurement { seed: 18446744073709551615 trials: 2147483647 }
timeout_s: -1 priority: -2147483648'
seed wire_utf8 '
name: "r\303\251sum\303\251 \360\237\232\200 \342\200\256"
base { workload: "mlp" device: "cuda:\331\241" }
labels { key: "\303\251quipe" value: "" }'

# By hand: tag (field << 3 | wire type), then the value.
{ cat "$out/wire_minimal"
  # Unknown fields: 100 varint, 101 length-delimited, 102 fixed64, 103 fixed32.
  printf '\xa0\x06\x01\xaa\x06\x03abc\xb1\x06\x01\x02\x03\x04\x05\x06\x07\x08\xbd\x06\x01\x02\x03\x04'
} >"$out/wire_unknown_fields"
# sweep (3) { batch_size (17) 8, 16 unpacked, then 32, 64 packed }.
printf 'W\x12\x05\x0a\x03mlp\x1a\x0b\x88\x01\x08\x88\x01\x10\x8a\x01\x02\x20\x40' \
  >"$out/wire_sweep_packed_and_unpacked"
# Two base messages: the second merges into the first.
printf 'W\x12\x05\x0a\x03mlp\x12\x02\x28\x08' >"$out/wire_merged_base"
# A length that runs past the end of the input.
printf 'W\x12\x7f\x0a\x03mlp' >"$out/wire_truncated"
# A varint of eleven bytes.
printf 'W\x38\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01' >"$out/wire_long_varint"
# A name (1) that is not UTF-8: proto3 strings must be.
printf 'W\x0a\x02\xff\xfe\x12\x05\x0a\x03mlp' >"$out/wire_invalid_utf8"
