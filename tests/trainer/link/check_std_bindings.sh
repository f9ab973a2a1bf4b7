#!/usr/bin/env bash
# check_std_bindings.sh BINARY [BINARY...]: fails when a torch-linked binary of ours would take
# C++ standard library functions from LibTorch instead of libstdc++. libtorch_cpu.so exports its
# own copies of libstdc++ functions (std::filesystem among them); a binary bound to those crashed
# in std::filesystem::remove_all where the linker ran with --as-needed. Two checks per binary:
#  1. its dynamic section: libstdc++.so.6 is NEEDED, before every libtorch*/libc10* library
#     (the dynamic linker searches NEEDED libraries in that order), unless the toolchain links
#     libstdc++ statically;
#  2. the dynamic linker's own bindings (LD_DEBUG=bindings with LD_BIND_NOW=1, so every symbol is
#     bound at start-up, before main runs): no symbol that libstdc++ defines is bound to a torch
#     library.
set -u
libstdcxx=$(g++ -print-file-name=libstdc++.so.6)
[ -r "$libstdcxx" ] || { echo "check_std_bindings: no libstdc++.so.6 found by g++" >&2; exit 2; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
nm -D --defined-only "$libstdcxx" | awk '{print $NF}' | sed 's/@.*//' | sort -u > "$work/libstdcxx.syms"
failed=0
for bin in "$@"; do
  bin=$(realpath "$bin")
  name=$(basename "$bin")
  needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  std_at=$(grep -n '^libstdc++\.so\.6$' <<<"$needed" | head -1 | cut -d: -f1)
  torch_at=$(grep -nE '^lib(torch|c10)' <<<"$needed" | head -1 | cut -d: -f1)
  if [ -z "$torch_at" ]; then
    echo "FAIL $name: links no torch library (NEEDED: $(tr '\n' ' ' <<<"$needed"))"; failed=1; continue
  fi
  # No libstdc++.so.6 at all is a toolchain that links it statically (seen on a GPU host's g++ 13).
  # The few libstdc++ symbols such a binary still imports (__cxa_pure_virtual) are looked up in
  # load order, LibTorch included: check 2 sees where each of them binds.
  if [ -n "$std_at" ] && [ "$std_at" -gt "$torch_at" ]; then
    echo "FAIL $name: libstdc++.so.6 is NEEDED only after a torch library; NEEDED order: $(tr '\n' ' ' <<<"$needed")"
    failed=1
  fi
  LD_BIND_NOW=1 LD_DEBUG=bindings LD_DEBUG_OUTPUT="$work/$name" timeout 60 "$bin" --help >/dev/null 2>&1 </dev/null
  cat "$work/$name".* 2>/dev/null > "$work/$name.all"
  # "binding file FROM [0] to TO [0]: normal symbol `SYM' [VERSION]"; FROM is ours (not a
  # library of torch, its wheel's dependencies or the system).
  awk -v bin="$bin" '/binding file/ && $4 == bin && $7 ~ /\/lib(torch|c10)[^\/]*\.so/ {
         sym = $0; sub(/.*symbol `/, "", sym); sub(/'"'"'.*/, "", sym); print sym }' "$work/$name.all" | sort -u > "$work/$name.torch"
  if [ ! -s "$work/$name.all" ]; then
    echo "FAIL $name: LD_DEBUG reported no bindings (cannot check)"; failed=1; continue
  fi
  stolen=$(comm -12 "$work/$name.torch" "$work/libstdcxx.syms")
  if [ -n "$stolen" ]; then
    echo "FAIL $name: $(wc -l <<<"$stolen") libstdc++ symbol(s) bound to LibTorch's copies, e.g.:"
    head -5 <<<"$stolen" | c++filt | sed 's/^/    /'
    failed=1
  else
    how="libstdc++.so.6 NEEDED before LibTorch"; [ -z "$std_at" ] && how="libstdc++ linked statically"
    echo "ok   $name: $how; $(wc -l < "$work/$name.torch") symbols from LibTorch, none of them libstdc++'s"
  fi
done
exit $failed
