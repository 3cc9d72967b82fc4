#!/usr/bin/env bash
# The one-shot GPU check of the CUDA backend (issue 17), for a machine with a GPU, CUDA 13 and
# Python with torch + transformers, but no Debian packages, no network and minutes of GPU time.
#
#   scripts/gpu-check.sh bundle [DIR]  # here (no GPU needed): builds llmserve, unit_cuda and
#       bench_cuda in build/ (under the shared build lock) and packs them stripped, with every
#       shared library they load and the dynamic loader, the default model's tokenizer
#       (tokenizer.json + tokenizer_config.json) and the Python scripts the check runs, into
#       DIR/payload.tar.xz beside DIR/MANIFEST (DIR default .gpu-bundle, git-ignored). Prints the
#       size; fails over 60 MiB.
#   scripts/gpu-check.sh run [DIR]     # there: fails within seconds without a GPU; else runs the
#       stages below, each under `timeout` and a total budget (LLMSERVE_GPU_CHECK_BUDGET, 440 s),
#       going on after a failed stage, and writes the report (gpu-report.md, gpu-check.json, the
#       logs) into $OUT when set, else bench/gpu-report-<time>.{md,json}. Exit 0 only when every
#       stage passed. When the probe fails the rest is skipped, unless LLMSERVE_GPU_CHECK_ALL_STAGES
#       is set (to exercise every stage of this script on a machine without a GPU).
#
# Stages: probe (the bundled unit_cuda sees the device, cuBLAS computes); unit-tests (unit_cuda
# with LLMSERVE_REQUIRE_GPU=1: no GPU test may skip); oracle-make (tests/reference/gpu_oracle.py:
# random-weight HF models and transformers' logits); oracle-test (llmserve on those models on
# CUDA against them); oracle-cpu (the CPU backend against the same references); daemon
# (`llmserve serve --device cuda` serving HTTP, SSE, gRPC and /metrics); spec-identity (scripts/gpu_check/spec_identity.py: token ids with n-gram speculation
# on and off, and batched against alone, must be equal); kv-quant (perplexity with f16, int8 and
# fp8 KV pages on the device); bench
# (bench_cuda: kernels, attention, the 8B-shaped model's decode with BF16 and with FP8 weights);
# sdpa (torch
# SDPA on the same attention shapes); then the report (scripts/gpu_check/report.py).
#
# Device tool call: run(command="scripts/gpu-check.sh run", carry=[".gpu-bundle"], timeout_s=540)
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
bundle=${2:-.gpu-bundle}
bundle=${bundle%/}
# The device tool carries at most 64 MiB: this tree's other files and the bundle together.
tree_bytes() { git ls-files -z 2>/dev/null | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1; }

usage() {
  echo "usage: scripts/gpu-check.sh bundle|run [DIR]" >&2
  exit 2
}

# ---------------------------------------------------------------------------------------------
# bundle
copy_libs() {  # copy_libs DEST BINARY...: every library the binaries load, as its soname
  local dest=$1 libc_dir
  shift
  ldd "$@" |
    awk '$2 == "=>" && $3 ~ /^\// {print $1, $3} $1 ~ /^\/.*ld-linux/ {print "LOADER", $1}' |
    sort -u | while read -r name path; do
      if [[ $name == LOADER ]]; then
        cp -L "$path" "$dest/$(basename "$path")"
      else
        cp -L "$path" "$dest/$name"
      fi
    done
  # The rest of glibc beside the libc they use (libcublas and the driver need libdl, librt,
  # libpthread; NSS may load its modules): one glibc, never a mix with the other machine's.
  libc_dir=$(dirname "$(ldd "$1" | awk '$1 == "libc.so.6" {print $3}')")
  for lib in libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 libresolv.so.2 \
    libutil.so.1 libanl.so.1 libnss_files.so.2 libnss_dns.so.2 libgcc_s.so.1; do
    [[ -e $libc_dir/$lib && ! -e $dest/$lib ]] && cp -L "$libc_dir/$lib" "$dest/$lib"
  done
  return 0
}

make_bundle() {
  set -e
  local build=${LLMSERVE_BUILD_DIR:-build} venv=.venv-gpucheck tmp size
  if [[ ! -f $build/build.ninja ]]; then
    scripts/setup.sh --no-build
    flock /tmp/llmserve-build.lock cmake -S . -B "$build" -G Ninja \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLLMSERVE_CUDA=ON
  fi
  flock /tmp/llmserve-build.lock ninja -C "$build" -j"${JOBS:-2}" llmserve unit_cuda bench_cuda
  scripts/fetch-model.sh
  if [[ ! -x $venv/bin/python ]]; then python3 -m venv "$venv"; fi
  "$venv/bin/pip" install --quiet --disable-pip-version-check \
    -r tests/reference/requirements-gpu-check.txt

  tmp=$(mktemp -d /tmp/gpu-bundle.XXXXXX)
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/bin" "$tmp/lib" "$tmp/tokenizer" "$tmp/py"
  local exes=("$build/llmserve" "$build/tests/unit/cuda/unit_cuda" "$build/bench/cuda/bench_cuda")
  for exe in "${exes[@]}"; do strip -o "$tmp/bin/$(basename "$exe")" "$exe"; done
  copy_libs "$tmp/lib" "${exes[@]}"
  "$venv/bin/python" tests/reference/export_gguf_tokenizer.py \
    --gguf models/SmolLM2-135M-Instruct.Q4_1.gguf --out "$tmp/tokenizer"
  cp tests/reference/gpu_oracle.py bench/cuda/torch_attention_bench.py \
    scripts/gpu_check/daemon_check.py scripts/gpu_check/spec_identity.py \
    scripts/gpu_check/report.py "$tmp/py/"
  cp /usr/share/common-licenses/GPL-3 "$tmp/py/GPL-3.txt"  # the kv-quant stage's text
  {
    echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
      "($(git status --porcelain 2>/dev/null | grep -vc '^??' || true) tracked files changed)"
    echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m), $(ldd --version | head -1)"
    echo "source $PWD"
    (cd "$tmp" && find bin lib tokenizer py -type f -printf '%s %p\n' | sort -k2)
  } >"$tmp/MANIFEST"
  # What travels: the MANIFEST and one xz tarball (python's tarfile unpacks it there).
  local raw out
  raw=$(du -sb "$tmp" | cut -f1)
  out=$(mktemp -d /tmp/gpu-bundle-out.XXXXXX)
  cp "$tmp/MANIFEST" "$out/"
  tar -C "$tmp" -cf - bin lib tokenizer py | xz -T"${JOBS:-2}" -6 >"$out/payload.tar.xz"
  size=$(du -sb "$out" | cut -f1)
  rm -rf "$bundle" "$tmp"
  mv "$out" "$bundle"
  trap - EXIT
  git check-ignore -q "$bundle/" 2>/dev/null ||
    echo "/$bundle/" >>"$(git rev-parse --git-path info/exclude)"
  local parts
  parts=$(awk '$2 ~ /^bin\// {b += $1} $2 ~ /^lib\// {n++; l += $1}
    END {printf "%d KiB binaries, %d libraries in %d KiB", b / 1024, n, l / 1024}' "$bundle/MANIFEST")
  echo "bundle: $bundle: $((size / 1024)) KiB to carry" \
    "($((raw / 1024)) KiB unpacked: $parts)"
  local tree max_bundle_bytes
  tree=$(tree_bytes)
  max_bundle_bytes=$(((64 << 20) - ${tree:-0} - (2 << 20)))
  if ((size > max_bundle_bytes)); then
    echo "bundle: $size bytes is over the limit of $max_bundle_bytes (64 MiB less" \
      "${tree:-0} bytes of tracked files and a 2 MiB margin)" >&2
    return 1
  fi
}

# ---------------------------------------------------------------------------------------------
# run
start=$(date +%s)
budget=${LLMSERVE_GPU_CHECK_BUDGET:-440}
elapsed() { echo $(($(date +%s) - start)); }

# Says why there is nothing to check, leaves that in $OUT when set, and exits 1.
fail_fast() {
  echo "gpu-check: FAILED: $*" >&2
  if [[ -n ${OUT:-} ]]; then
    mkdir -p "$OUT"
    printf '# GPU check (issue 17): %s\n\n**FAILED** after %s s: %s\n' \
      "$(date -u +%Y-%m-%dT%H:%MZ)" "$(elapsed)" "$*" >"$OUT/gpu-report.md"
  fi
  exit 1
}

find_cublas_dir() {
  local d sp
  local dirs=()
  IFS=: read -ra dirs <<<"${LD_LIBRARY_PATH:-}"
  dirs+=(/usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib)
  while read -r sp; do
    [[ -n $sp ]] && dirs+=("$sp/nvidia/cu13/lib" "$sp/nvidia/cublas/lib")
  done < <(timeout 20 python3 -c \
    'import site; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' \
    2>/dev/null)
  for d in "${dirs[@]}"; do
    [[ -n $d && -e $d/libcublas.so.13 ]] && { echo "$d"; return 0; }
  done
  d=$(ldconfig -p 2>/dev/null | awk '/libcublas\.so\.13 / {print $NF; exit}')
  [[ -n $d ]] && dirname "$d"
  return 0
}

# run_timed NAME LIMIT CMD...: runs CMD with its output in $work/NAME.txt under
# min(LIMIT, budget left); sets rc and secs (rc 200: no time left to start it).
run_timed() {
  local name=$1 limit=$2 left t0
  shift 2
  left=$((budget - $(elapsed) - 10))
  if ((left < 15)); then
    rc=200 secs=0
    echo "== $name: not run, $(elapsed) s of the $budget s budget used"
    return
  fi
  ((limit > left)) && limit=$left
  echo "== $name (limit $limit s) =="
  t0=$(date +%s)
  timeout -k 10 "$limit" "$@" >"$work/$name.txt" 2>&1
  rc=$?
  secs=$(($(date +%s) - t0))
  tail -n 25 "$work/$name.txt"
  echo "== $name: exit $rc after $secs s"
}

record() {  # record NAME RC SECS NOTE (a failed stage without a note: its log's last line)
  local note=${4:-}
  if [[ $2 != 0 && -z $note && -f $work/$1.txt ]]; then
    note=$(grep -v '^[[:space:]]*$' "$work/$1.txt" | tail -1 | cut -c1-300)
  fi
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${note//$'\t'/ }" >>"$work/stages.tsv"
  [[ $2 == 0 ]] || failed+=("$1")
  if [[ -n ${OUT:-} ]]; then  # what has run so far survives a kill of the whole command
    mkdir -p "$OUT"
    cp "$work/stages.tsv" "$OUT/"
    tar -C "$work" -czf "$OUT/logs.tar.gz" --exclude=oracle . 2>/dev/null
  fi
  return 0
}

gtest_stage() {  # gtest_stage NAME LIMIT GTEST_ARGS...: a unit_cuda run, judged by report.py
  local name=$1 limit=$2 note
  shift 2
  run_timed "$name" "$limit" env LLMSERVE_REQUIRE_GPU=1 "${bin[@]}" "$bundle/bin/unit_cuda" \
    --gtest_color=no "$@"
  note=$(python3 "$bundle/py/report.py" gtest-verdict "$work/$name.txt" 2>&1 | tail -1)
  [[ $rc == 0 && $note != ok:* ]] && rc=1
  record "$name" "$rc" "$secs" "$note"
}

copy_out() {  # the report and logs into $OUT (at most 8 files) or bench/
  local dest f stamp
  if [[ -n ${OUT:-} ]]; then
    dest=$OUT
    mkdir -p "$dest"
    cp "$work/gpu-report.md" "$work/gpu-check.json" "$dest/" 2>/dev/null
    tar -C "$work" -czf "$dest/logs.tar.gz" --exclude=oracle . 2>/dev/null
    for f in unit-tests oracle-test bench daemon; do
      [[ -f $work/$f.txt ]] || continue
      if (($(stat -c %s "$work/$f.txt") > 4000000)); then
        {
          head -c 1000000 "$work/$f.txt"
          printf '\n[... cut ...]\n'
          tail -c 3000000 "$work/$f.txt"
        } >"$dest/$f.txt"
      else
        cp "$work/$f.txt" "$dest/"
      fi
    done
  else
    stamp=$(date -u +%Y%m%d-%H%M)
    cp "$work/gpu-report.md" "bench/gpu-report-$stamp.md"
    cp "$work/gpu-check.json" "bench/gpu-report-$stamp.json"
    dest="bench/gpu-report-$stamp.md (logs in $work)"
  fi
  echo "report: $dest"
}

run_check() {
  local loader probe_note src
  command -v nvidia-smi >/dev/null 2>&1 || fail_fast "no GPU: nvidia-smi is not on PATH"
  local query=name,driver_version,memory.total,clocks.sm,clocks.mem,temperature.gpu,power.draw
  gpu=$(timeout 20 nvidia-smi --query-gpu=$query --format=csv,noheader 2>&1) ||
    fail_fast "no GPU: nvidia-smi failed: ${gpu:0:300}"
  [[ $gpu == *[A-Za-z]* && $gpu != *"No devices"* ]] ||
    fail_fast "no GPU: nvidia-smi lists no device"
  [[ -f $bundle/payload.tar.xz && -f $bundle/MANIFEST ]] || fail_fast "no bundle at $bundle:" \
    "build it with 'scripts/gpu-check.sh bundle' where the Debian packages are, and carry it"
  local packed=$bundle
  bundle=$(mktemp -d /tmp/gpu-bundle-run.XXXXXX)
  cp "$packed/MANIFEST" "$bundle/"
  python3 -W ignore -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
    "$packed/payload.tar.xz" "$bundle" || fail_fast "cannot unpack $packed/payload.tar.xz"
  for f in bin/llmserve bin/unit_cuda bin/bench_cuda py/report.py tokenizer/tokenizer.json; do
    [[ -e $bundle/$f ]] || fail_fast "the bundle lacks $f"
  done
  local loaders=("$bundle"/lib/ld-linux-x86-64.so.*)
  loader=${loaders[0]}
  [[ -x $loader ]] || fail_fast "the bundle has no dynamic loader"
  # Tests read fixtures through the source path compiled into them: point it at this tree.
  src=$(awk '$1 == "source" {print $2}' "$bundle/MANIFEST")
  if [[ -n $src && ! -e $src ]]; then
    mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src" && echo "gpu-check: linked $src -> $PWD"
  fi
  cublas_dir=$(find_cublas_dir)
  # The bundle's libraries first (its glibc must win), then the caller's path, the driver's
  # folder and cuBLAS (dlopened by name, found through this path too).
  libpath="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}:/usr/local/nvidia/lib64"
  libpath+=${cublas_dir:+:$cublas_dir}
  bin=("$loader" --library-path "$libpath")
  work=$(mktemp -d /tmp/gpu-check.XXXXXX)
  failed=()
  : >"$work/stages.tsv"
  echo "gpu-check: $gpu; cuBLAS in ${cublas_dir:-(not found)}; bundle $(head -1 "$bundle/MANIFEST")"

  run_timed probe 60 env LLMSERVE_REQUIRE_GPU=1 "${bin[@]}" "$bundle/bin/unit_cuda" \
    --gtest_color=no --gtest_filter='GpuProbe.*'
  probe_note=$(grep -h '^\[ gpu \]' "$work/probe.txt" | tr '\n' ' ')
  [[ $rc == 0 ]] || probe_note="the bundled binaries see no usable GPU: $(
    grep -m3 -E 'Failure|error|FAILED|cannot' "$work/probe.txt" | tr '\n' ' ')"
  record probe "$rc" "$secs" "$probe_note"
  if [[ $rc == 0 || -n ${LLMSERVE_GPU_CHECK_ALL_STAGES:-} ]]; then
    gpu_stages
  else  # nothing of ours can run: no GPU time spent on the rest
    for f in unit-tests oracle-make oracle-test oracle-cpu daemon bench sdpa; do
      record "$f" 201 0 "not run: the probe failed"
    done
  fi
  write_report
}

# Quantized KV caches on the device: `llmserve perplexity --device cuda` of the random-weight
# SmolLM2-shaped model over GPL-3 (ctx 512, 4 windows) with f16, int8 and fp8 pages; int8 and
# fp8 must stay within 2 % of f16 (the real model does not fit the bundle).
kv_quant_stage() {
  local model=$1 t0=$SECONDS d out ppl f16="" rc=0 note="" left per
  left=$((budget - $(elapsed) - 10))
  if ((left < 15)); then
    record kv-quant 200 0 "not run, $(elapsed) s of the $budget s budget used"
    return
  fi
  per=$((left / 3 < 60 ? left / 3 : 60))
  for d in f16 int8 fp8; do
    out=$(timeout -k 5 "$per" "${bin[@]}" "$bundle/bin/llmserve" perplexity --model "$model" \
      --file "$bundle/py/GPL-3.txt" --ctx 512 --chunks 4 --device cuda --kv-cache-dtype "$d" \
      --json 2>>"$work/kv-quant.txt" | tail -1)
    echo "KVQUANT $d $out" >>"$work/kv-quant.txt"
    if ! ppl=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["ppl"])' "$out" \
      2>/dev/null); then
      rc=1
      note+="$d failed; "
      continue
    fi
    note+="$d ppl $ppl; "
    if [[ $d == f16 ]]; then
      f16=$ppl
    elif [[ -n $f16 ]] && ! python3 -c \
      'import sys; a, b = map(float, sys.argv[1:]); sys.exit(abs(b / a - 1) > 0.02)' "$f16" "$ppl"; then
      rc=1
      note+="($d more than 2 % from f16) "
    fi
  done
  record kv-quant "$rc" "$((SECONDS - t0))" "$note"
}

gpu_stages() {
  local oracle_dir=$work/oracle nbench
  gtest_stage unit-tests 150 --gtest_filter='-HfOracle.*:GpuProbe.*'

  run_timed oracle-make 150 env PYTHONUNBUFFERED=1 python3 "$bundle/py/gpu_oracle.py" \
    --out "$oracle_dir" --tokenizer "$bundle/tokenizer" --device cuda
  record oracle-make "$rc" "$secs" "$(grep -h '^gpu_oracle:' "$work/oracle-make.txt" | tail -3 |
    tr '\n' ' ')"

  export LLMSERVE_GPU_ORACLE_DIR=$oracle_dir
  gtest_stage oracle-test 120 --gtest_filter='HfOracle.*'
  # The same references against the CPU backend (checked against llama.cpp on its own): where
  # CUDA fails and this passes, the fault is on the CUDA side, not in the reference.
  LLMSERVE_GPU_ORACLE_BACKEND=cpu gtest_stage oracle-cpu 120 \
    --gtest_filter='HfOracle.Smollm2ShapeCudaGraphs:HfOracle.HeadDim128Gqa4Eager'
  unset LLMSERVE_GPU_ORACLE_DIR

  run_timed daemon 150 env PYTHONUNBUFFERED=1 python3 "$bundle/py/daemon_check.py" \
    --llmserve "$(printf '%q ' "${bin[@]}" "$bundle/bin/llmserve")" \
    --model "$oracle_dir/smollm2-135m-shape" --out "$work/daemon"
  cp "$work/daemon/daemon.json" "$work/daemon/daemon-serve.log" "$work/" 2>/dev/null
  local note
  note="$(grep -c '^DAEMON ok' "$work/daemon.txt") checks ok,"
  note+=" $(grep -c '^DAEMON FAIL' "$work/daemon.txt") failed"
  record daemon "$rc" "$secs" "$note"

  run_timed spec-identity 100 env PYTHONUNBUFFERED=1 python3 "$bundle/py/spec_identity.py" \
    --llmserve "$(printf '%q ' "${bin[@]}" "$bundle/bin/llmserve")" \
    --model "$oracle_dir/smollm2-135m-shape" --device cuda --out "$work/spec"
  cp "$work/spec/spec_identity.json" "$work/" 2>/dev/null
  record spec-identity "$rc" "$secs" "$(grep -hE '^(SPEC|BATCH) identical' \
    "$work/spec-identity.txt" | cut -d' ' -f1-3 | tr '\n' ' ')"

  kv_quant_stage "$oracle_dir/smollm2-135m-shape"

  run_timed bench 240 "${bin[@]}" "$bundle/bin/bench_cuda" --model-preset llama-3.1-8b --model-fp8
  nbench=$(grep -c '^BENCH ' "$work/bench.txt")
  if [[ $rc == 0 ]] && { ! grep -q '^## GPU:' "$work/bench.txt" ||
    grep -qE 'CUDA ERROR|STEP ERROR' "$work/bench.txt" ||
    ! grep -q '"kernel": "model_decode"' "$work/bench.txt"; }; then
    rc=1
  fi
  record bench "$rc" "$secs" "$nbench BENCH lines"

  run_timed sdpa 120 env PYTHONUNBUFFERED=1 python3 "$bundle/py/torch_attention_bench.py" \
    --bench-log "$work/bench.txt" --json-out "$work/sdpa.json" --md-out "$work/sdpa.md"
  record sdpa "$rc" "$secs" "$(grep -c '^TORCH ' "$work/sdpa.txt") shapes"
}

write_report() {
  GPU="$gpu" PROBE="$probe_note" CUBLAS="${cublas_dir:-not found}" LIBPATH="$libpath" \
    BUNDLE="$(head -2 "$bundle/MANIFEST" | tr '\n' ' ')" BUDGET="$budget" \
    COMMIT="$(git rev-parse --short HEAD 2>/dev/null || echo 'no git here')" \
    TOTAL="$(elapsed)" python3 - "$work/meta.json" <<'EOF'
import json, os, platform, sys, time
meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "gpu": os.environ["GPU"],
        "gpu_probe": os.environ["PROBE"], "cublas": os.environ["CUBLAS"],
        "libpath": os.environ["LIBPATH"], "bundle": os.environ["BUNDLE"],
        "commit": os.environ["COMMIT"], "python": platform.python_version(),
        "budget_seconds": int(os.environ["BUDGET"]), "total_seconds": int(os.environ["TOTAL"])}
json.dump(meta, open(sys.argv[1], "w"), indent=1)
EOF
  python3 "$bundle/py/report.py" build --work "$work" --md "$work/gpu-report.md" \
    --json "$work/gpu-check.json" || echo "gpu-check: the report script failed" >&2
  copy_out
  # The end of the output is what the device tool returns: the stage table and the targets.
  sed -n '/^## Stages/,/^## Correctness/p' "$work/gpu-report.md" | grep '^|'
  sed -n "/^## Where the issue's targets stand/,\$p" "$work/gpu-report.md" | grep '^|'
  if ((${#failed[@]})); then
    echo "gpu-check: FAILED stages: ${failed[*]} ($(elapsed) s)"
    return 1
  fi
  echo "gpu-check: all stages passed ($(elapsed) s)"
}

case $mode in
  bundle) make_bundle ;;
  run) run_check ;;
  *) usage ;;
esac
