#!/usr/bin/env bash
# The llm-rdzv-trainer Debian package end to end, without Slurm: build both packages with
# packaging/build-deb.sh (dpkg-buildpackage + lintian), check what the trainer package holds and
# depends on (no LibTorch inside, no RUNPATH into the build machine's venv), install it on this
# machine, and as a site admin would: an unconfigured `trainer` stops with a message naming
# /etc/llm-rdzv/trainer.conf; with torch_site= pointing at the venv that holds the pinned wheel,
# `trainer --help` works, a tiny CPU training run writes an HF model directory, a --dataset_name
# run reads a save_to_disk dataset through the packaged Arrow module, `trainer generate`
# samples from it, and `--nproc 2` runs two ranks through the rdzvd of the llm-rdzv package
# (unpacked, not installed); a torch of another version is refused. Then purge and check nothing
# is left. Needs root (dpkg -i).
#   deb_trainer_test.sh SOURCE_DIR OUT_DIR VENV
set -euo pipefail
src=${1:?usage: deb_trainer_test.sh SOURCE_DIR OUT_DIR VENV}
out=${2:?usage: deb_trainer_test.sh SOURCE_DIR OUT_DIR VENV}
venv=${3:?usage: deb_trainer_test.sh SOURCE_DIR OUT_DIR VENV}
[ "${LLMRDZV_TRAINER_PACKAGES:-0}" = 1 ] || {
  echo "skipped: set LLMRDZV_TRAINER_PACKAGES=1 (compiles the trainer again for the package: ~26 min cold on 2 cores)"
  exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "skipped: needs root (dpkg -i)"; exit 77; }
[ -x "$venv/bin/python" ] || { echo "skipped: no venv at $venv (scripts/setup.sh makes it)"; exit 77; }
venv=$(cd "$venv" && pwd -P)
source "$(dirname "$0")/expect.sh"
die() { printf 'FAIL: %s\n' "$*"; exit 1; }

if [ "${LLMRDZV_REUSE_DEBS:-0}" = 1 ] && ls "$out"/llm-rdzv-trainer_*.deb >/dev/null 2>&1; then
  echo "note: LLMRDZV_REUSE_DEBS=1: using the packages already in $out"
else
  "$src/packaging/build-deb.sh" --out "$out" --venv "$venv"
fi
deb=$(ls "$out"/llm-rdzv-trainer_*.deb)
deb_rdzv=$(ls "$out"/llm-rdzv_*.deb)
for d in "$deb_rdzv" "$deb"; do
  printf 'size: %s %s KiB (.deb), Installed-Size %s KiB\n' "$(basename "$d")" \
    "$(( $(stat -c %s "$d") / 1024 ))" "$(dpkg-deb -f "$d" Installed-Size)"
done

work=$(mktemp -d)
chmod 755 "$work"
conf=/etc/llm-rdzv/trainer.conf
cleanup() {
  dpkg --purge llm-rdzv-trainer >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# ---- the package as built ------------------------------------------------------------------------
contents=$(dpkg-deb -c "$deb" | awk '{ print $NF }')
for f in ./usr/bin/trainer ./usr/libexec/llm-rdzv/trainer ./etc/llm-rdzv/trainer.conf \
         ./usr/share/man/man1/trainer.1.gz ./usr/share/doc/llm-rdzv-trainer/copyright \
         ./usr/share/llm-rdzv/trainer/default.yaml ./usr/libexec/llm-rdzv/llmrdzv_arrow_reader.so; do
  check "$deb holds $f" grep -qxF "$f" <<<"$contents"
done
check "$deb bundles a shared library besides its Arrow module" \
  bash -c '! grep -v "llmrdzv_arrow_reader\.so$" <<<"$1" | grep -q "\.so"' _ "$contents"
dpkg-deb -x "$deb" "$work/unpacked"
dynamic=$(readelf -d "$work/unpacked/usr/libexec/llm-rdzv/trainer")
check "the installed trainer binary has a RUNPATH/RPATH" bash -c '! grep -qE "\((RUNPATH|RPATH)\)" <<<"$1"' _ "$dynamic"
module=$(readelf -d "$work/unpacked/usr/libexec/llm-rdzv/llmrdzv_arrow_reader.so")
check "the Arrow module has a RUNPATH/RPATH" bash -c '! grep -qE "\((RUNPATH|RPATH)\)" <<<"$1"' _ "$module"
check "the trainer binary does not need libtorch_cuda.so (no CUDA LibTorch)" grep -q 'libtorch_cuda\.so' <<<"$dynamic"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
check "Depends names a torch/NVIDIA library package" bash -c '! grep -qiE "torch|nvidia|cuda|nccl" <<<"$1"' _ "$depends"
check "Depends lacks the Debian gRPC library" grep -q 'libgrpc++1.51' <<<"$depends"
check "conffile list lacks trainer.conf" bash -c 'dpkg-deb --ctrl-tarfile "$1" | tar -xOf - ./conffiles | grep -qx /etc/llm-rdzv/trainer.conf' _ "$deb"

# ---- installed, as a site admin would --------------------------------------------------------
dpkg -i "$deb" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; die "dpkg -i $deb"; }
echo "ok: installed $(basename "$deb")"
check "man -w trainer finds no page" bash -c "man -w trainer >/dev/null"
[ -f "$conf" ] || die "$conf not installed"

# Unconfigured: the shipped default names /opt/llm-rdzv/torch, which this machine does not have.
if [ ! -e /opt/llm-rdzv/torch ]; then
  expect 1 "trainer: error: /opt/llm-rdzv/torch holds no torch" -- env -u LLM_RDZV_TORCH_SITE trainer --help
fi
# A torch of another version is refused before the binary runs.
mkdir -p "$work/old/torch"
echo "__version__ = '1.0.0'" >"$work/old/torch/version.py"
expect 1 "has torch 1.0.0 but this trainer was built against" -- env LLM_RDZV_TORCH_SITE="$work/old" trainer --help
# Without the wrapper the binary cannot start: it really takes LibTorch from the configured venv.
expect 127 "error while loading shared libraries" -- env -u LD_LIBRARY_PATH /usr/libexec/llm-rdzv/trainer --help

# Configured the documented way: torch_site= in trainer.conf names the venv.
sed -i "s|^torch_site=.*|torch_site=$venv|" "$conf"
expect 0 "--train_file" -- env -u LLM_RDZV_TORCH_SITE trainer --help
expect 0 "--max_new_tokens" -- env -u LLM_RDZV_TORCH_SITE trainer generate --help

# A tiny CPU training run from the installed files (run from / so nothing resolves to the checkout).
for i in $(seq 40); do
  echo "line $i: the quick brown fox jumps over the lazy dog while the rendezvous daemon waits."
done >"$work/tiny.txt"
run=(trainer --do_train --train_file "$work/tiny.txt"
     --config_overrides n_layer=1,n_head=1,n_embd=16,n_positions=16 --block_size 8
     --per_device_train_batch_size 2 --max_steps 3 --logging_steps 1 --save_steps 0 --threads 1)
expect 0 "train_loss" -- bash -c 'cd / && env -u LLM_RDZV_TORCH_SITE "$@"' _ "${run[@]}" --output_dir "$work/run1"
for f in config.json model.safetensors all_results.json metrics.jsonl; do
  check "the run left no $f in its output_dir" test -s "$work/run1/$f"
done
# --dataset_name through the packaged Arrow module and the venv's pyarrow libraries.
"$venv/bin/python" -c "import datasets, sys; datasets.DatasetDict({'train': datasets.Dataset.from_dict({'text': ['row %d of the tiny dataset' % i for i in range(200)]})}).save_to_disk(sys.argv[1])" \
  "$work/saved" >/dev/null 2>&1 || die "the datasets library could not write $work/saved"
dataset_run=("${run[@]}")
dataset_run[2]=--dataset_name
dataset_run[3]="$work/saved"
expect 0 "read with Apache Arrow" -- bash -c 'cd / && env -u LLM_RDZV_TORCH_SITE "$@"' _ "${dataset_run[@]}" \
  --output_dir "$work/run-dataset"
expect 0 "" -- bash -c 'cd / && trainer generate --model "$1" --prompt "the quick" --max_new_tokens 8 --threads 1' \
  _ "$work/run1"

# --nproc 2: the ranks are the libexec binary again (they inherit the wrapper's library path) and
# the rendezvous is the rdzvd of the llm-rdzv package, unpacked here rather than installed.
dpkg-deb -x "$deb_rdzv" "$work/rdzv"
expect 0 "train_loss" -- bash -c 'cd / && LLM_RDZV_RDZVD="$1" "${@:2}"' _ "$work/rdzv/usr/sbin/rdzvd" \
  "${run[@]}" --nproc 2 --output_dir "$work/run2"
check "the --nproc 2 run left no model" test -s "$work/run2/model.safetensors"

# ---- purge -------------------------------------------------------------------------------------
dpkg --purge llm-rdzv-trainer >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; die "dpkg --purge"; }
for f in /usr/bin/trainer /usr/libexec/llm-rdzv "$conf" /usr/share/llm-rdzv/trainer; do
  check "$f left after purge" test ! -e "$f"
done
finish
