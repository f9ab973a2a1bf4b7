#!/usr/bin/env bash
# The trainer's LibTorch wrapper (packaging/scripts/trainer-wrapper.in), configured by
# tests/packaging/CMakeLists.txt to run ./fake-trainer beside it and to expect torch 9.9.9+test:
# it refuses a missing setting, a directory without torch and a torch of another version, each with
# a message naming the problem; with the right one (a site-packages directory, or a venv holding one)
# it runs the binary with torch/lib and every nvidia/*/lib (and pyarrow, where the environment has
# it) on LD_LIBRARY_PATH and LLMRDZV_ARROW_READER naming the Arrow module beside the binary (unless
# set), passing the arguments through; LLM_RDZV_TORCH_SITE beats the file.
#   trainer_wrapper_test.sh DIR   (DIR holds the configured `trainer`; its config file is DIR/trainer.conf)
set -euo pipefail
dir=${1:?usage: trainer_wrapper_test.sh DIR}
wrapper="$dir/trainer"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"

cat >"$dir/fake-trainer" <<'FAKE'
#!/bin/sh
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
echo "LLMRDZV_ARROW_READER=$LLMRDZV_ARROW_READER"
echo "args=$*"
FAKE
chmod +x "$dir/fake-trainer"

make_site() {  # make_site DIR VERSION
  mkdir -p "$1/torch/lib" "$1/nvidia/nccl/lib" "$1/nvidia/cu13/lib"
  echo "__version__ = '$2'" >"$1/torch/version.py"
}
make_site "$work/good" 9.9.9+test
make_site "$work/old" 1.0.0


rm -f "$dir/trainer.conf"
expect 1 "no LibTorch configured: set torch_site= in $dir/trainer.conf" -- env -u LLM_RDZV_TORCH_SITE "$wrapper" --help
expect 1 "$work/none holds no torch" -- env LLM_RDZV_TORCH_SITE="$work/none" "$wrapper"
expect 1 "$work/old has torch 1.0.0 but this trainer was built against 9.9.9+test" -- env LLM_RDZV_TORCH_SITE="$work/old" "$wrapper"
expect 0 "LD_LIBRARY_PATH=$work/good/torch/lib:$work/good/nvidia/cu13/lib:$work/good/nvidia/nccl/lib:/keep" -- \
  env LLM_RDZV_TORCH_SITE="$work/good" LD_LIBRARY_PATH=/keep "$wrapper" --config "a b.yaml"
expect 0 "args=--config a b.yaml" -- env LLM_RDZV_TORCH_SITE="$work/good" "$wrapper" --config "a b.yaml"
expect 0 "LLMRDZV_ARROW_READER=$dir/llmrdzv_arrow_reader.so" -- env -u LLMRDZV_ARROW_READER LLM_RDZV_TORCH_SITE="$work/good" "$wrapper"
expect 0 "LLMRDZV_ARROW_READER=/mine.so" -- env LLMRDZV_ARROW_READER=/mine.so LLM_RDZV_TORCH_SITE="$work/good" "$wrapper"
# The environment's pyarrow wheel: its libarrow and libparquet for --dataset_name.
mkdir -p "$work/good/pyarrow"
expect 0 "LD_LIBRARY_PATH=$work/good/torch/lib:$work/good/nvidia/cu13/lib:$work/good/nvidia/nccl/lib:$work/good/pyarrow:/keep" -- \
  env LLM_RDZV_TORCH_SITE="$work/good" LD_LIBRARY_PATH=/keep "$wrapper"
rmdir "$work/good/pyarrow"
printf '# comment\ntorch_site = %s\n' "$work/good" >"$dir/trainer.conf"
expect 0 "LD_LIBRARY_PATH=$work/good/torch/lib" -- env -u LLM_RDZV_TORCH_SITE "$wrapper"
expect 1 "$work/old has torch 1.0.0" -- env LLM_RDZV_TORCH_SITE="$work/old" "$wrapper"
ln -s "$wrapper" "$work/trainer-link"
expect 0 "args=x" -- env LLM_RDZV_TORCH_SITE="$work/good" "$work/trainer-link" x
# A venv stands for its lib/python3.*/site-packages.
make_site "$work/venv/lib/python3.9/site-packages" 9.9.9+test
mkdir -p "$work/venv/lib/python3.8/site-packages"
expect 0 "LD_LIBRARY_PATH=$work/venv/lib/python3.9/site-packages/torch/lib:" -- \
  env LLM_RDZV_TORCH_SITE="$work/venv" "$wrapper"
printf 'torch_site=%s\n' "$work/venv" >"$dir/trainer.conf"
expect 0 "LD_LIBRARY_PATH=$work/venv/lib/python3.9/site-packages/torch/lib:" -- env -u LLM_RDZV_TORCH_SITE "$wrapper"
expect 1 "$work/old/x holds no torch (no torch/version.py there or in lib/python3*/site-packages)" -- \
  env LLM_RDZV_TORCH_SITE="$work/old/x" "$wrapper"
rm -f "$dir/trainer.conf"

finish
