#!/usr/bin/env bash
# The trainer component as a package installs it, without building a package (that is
# packaging_deb_trainer, too slow for CI): `cmake --install --component trainer` of this build into
# a scratch DESTDIR, then the installed wrapper run the way a site runs it, LibTorch and pyarrow
# taken from the venv named by LLM_RDZV_TORCH_SITE: the binary and the Arrow module carry no
# RUNPATH into the build venv, a --train_file run works, and a --dataset_name run reads a save_to_disk
# dataset through the installed Arrow module; with the module's libraries missing (an environment
# without pyarrow) --dataset_name fails naming the library and the wheel to install.
#   trainer_install_test.sh BUILD_DIR VENV
set -euo pipefail
build=${1:?usage: trainer_install_test.sh BUILD_DIR VENV}
venv=${2:?usage: trainer_install_test.sh BUILD_DIR VENV}
[ -x "$build/bin/trainer" ] || { echo "skipped: no trainer in $build/bin"; exit 77; }
venv=$(cd "$venv" && pwd -P)
source "$(dirname "$0")/expect.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

DESTDIR="$work/root" cmake --install "$build" --component trainer --prefix /usr >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; echo "FAIL: cmake --install --component trainer"; exit 1; }
libexec="$work/root/usr/libexec/llm-rdzv"
wrapper="$work/root/usr/bin/trainer"
for f in "$wrapper" "$libexec/trainer" "$libexec/llmrdzv_arrow_reader.so"; do
  check "$f not installed" test -e "$f"
done
for f in "$libexec/trainer" "$libexec/llmrdzv_arrow_reader.so"; do
  check "$f has a RUNPATH/RPATH" bash -c '! readelf -d "$1" | grep -qE "\((RUNPATH|RPATH)\)"' _ "$f"
done
check "the Arrow module does not need libarrow.so.N" bash -c 'readelf -d "$1" | grep -q "NEEDED.*libarrow\.so\."' _ \
  "$libexec/llmrdzv_arrow_reader.so"

"$venv/bin/python" -c "import datasets, sys; datasets.DatasetDict({'train': datasets.Dataset.from_dict({'text': ['row %d of a tiny dataset, read through the installed Arrow module' % i for i in range(300)]})}).save_to_disk(sys.argv[1])" \
  "$work/saved" >"$work/python.log" 2>&1 || { cat "$work/python.log"; echo "FAIL: datasets could not write $work/saved"; exit 1; }
printf 'the quick brown fox jumps over the lazy dog.\n%.0s' $(seq 40) >"$work/tiny.txt"
common=(--do_train --config_overrides n_layer=1,n_head=1,n_embd=16,n_positions=16 --block_size 8
        --per_device_train_batch_size 2 --max_steps 2 --save_strategy no --threads 1 --report_to none)
site=(env -u LLMRDZV_ARROW_READER LLM_RDZV_TORCH_SITE="$venv")
expect 0 "train_loss" -- "${site[@]}" "$wrapper" "${common[@]}" --train_file "$work/tiny.txt" --output_dir "$work/run-file"
# The run log's dataset line ends "read with Apache Arrow <version> (<the module>)".
expect 0 "(${libexec}/llmrdzv_arrow_reader.so)" -- "${site[@]}" "$wrapper" "${common[@]}" --dataset_name "$work/saved" \
  --output_dir "$work/run-dataset"
# An environment without pyarrow: the torch libraries alone.
mkdir -p "$work/no-arrow"
ln -s "$venv"/lib/python3*/site-packages/torch "$work/no-arrow/torch"
for d in "$venv"/lib/python3*/site-packages/nvidia; do [ -d "$d" ] && ln -s "$d" "$work/no-arrow/nvidia"; done
expect 0 "train_loss" -- env LLM_RDZV_TORCH_SITE="$work/no-arrow" "$wrapper" "${common[@]}" --train_file "$work/tiny.txt" \
  --output_dir "$work/run-no-arrow"
expect 1 "libarrow.so." -- env LLM_RDZV_TORCH_SITE="$work/no-arrow" "$wrapper" "${common[@]}" --dataset_name "$work/saved" \
  --output_dir "$work/run-no-arrow-dataset"
expect 1 "wheel in its torch_site environment" -- env LLM_RDZV_TORCH_SITE="$work/no-arrow" "$wrapper" "${common[@]}" \
  --dataset_name "$work/saved" --output_dir "$work/run-no-arrow-dataset-2"
finish
