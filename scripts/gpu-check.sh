#!/usr/bin/env bash
# The one-shot GPU check of the CUDA backend (issue 6): CUDA kernel tests against their CPU
# twins, whole model steps against the CPU backend, then the GPU benchmarks; writes
# bench/gpu-report-<date>.md (and copies it to $OUT when set). Needs no network; <= 8 minutes.
#
#   scripts/gpu-check.sh bundle [DIR]  # here (no GPU needed): build unit_cuda and bench_cuda, pack
#                                      # them stripped with their shared libraries and the dynamic
#                                      # loader into DIR (default .gpu-bundle, git-ignored), so they
#                                      # run on a machine without this one's packages.
#   scripts/gpu-check.sh [run] [DIR]   # on the GPU machine: run the bundle in DIR when present,
#                                      # else build with CMake there (needs the Debian packages).
#
# Device tool call: run(command="scripts/gpu-check.sh run", carry=[".gpu-bundle"], timeout_s=540)
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:-run}
bundle=${2:-.gpu-bundle}
build=${LLMSERVE_GPU_BUILD_DIR:-build-cuda}

if [[ $mode == bundle ]]; then
  set -e
  cmake -S . -B "$build" -G Ninja -DLLMSERVE_CUDA=ON >/dev/null
  ninja -C "$build" -j"${JOBS:-2}" unit_cuda bench_cuda
  rm -rf "$bundle" && mkdir -p "$bundle"
  for exe in tests/unit/cuda/unit_cuda bench/cuda/bench_cuda; do
    strip -o "$bundle/$(basename "$exe")" "$build/$exe"
  done
  # Every shared library they load (libc and the loader included), so the system's don't matter.
  ldd "$build/tests/unit/cuda/unit_cuda" "$build/bench/cuda/bench_cuda" |
    awk '/=> \//{print $3} /^\t\/.*ld-linux/{print $1}' | sort -u |
    while read -r lib; do cp -L "$lib" "$bundle/"; done
  grep -qx "/$bundle/" .git/info/exclude 2>/dev/null || echo "/$bundle/" >>.git/info/exclude
  du -sh "$bundle"
  exit 0
fi

start=$(date +%s)
date_tag=$(date +%Y-%m-%d)
report=bench/gpu-report-$date_tag.md
log=$(mktemp -d)/gpu-check
mkdir -p "$log"
elapsed() { echo $(($(date +%s) - start)); }

# Start the binaries through the bundled loader when there is a bundle, else build here.
cublas_dir=
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
         "$(python3 -c 'import nvidia.cublas as m, os; print(os.path.dirname(m.__file__) + "/lib")' 2>/dev/null)"; do
  [[ -n $d && -e $d/libcublas.so.13 ]] && { cublas_dir=$d; break; }
done
libpath=$bundle:${cublas_dir:-/usr/local/cuda/lib64}
if [[ -x $bundle/unit_cuda ]]; then
  loader=$(ls "$bundle"/ld-linux-x86-64.so.* | head -1)
  run_tests=("$loader" --library-path "$libpath" "$bundle/unit_cuda")
  run_bench=("$loader" --library-path "$libpath" "$bundle/bench_cuda")
  how="prebuilt bundle $bundle"
else
  cmake -S . -B "$build" -G Ninja -DLLMSERVE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 >"$log/cmake.txt" 2>&1 &&
    timeout 240 ninja -C "$build" -j"$(nproc)" unit_cuda bench_cuda >"$log/build.txt" 2>&1 ||
    { echo "BUILD FAILED"; tail -40 "$log/cmake.txt" "$log/build.txt" 2>/dev/null; exit 1; }
  export LD_LIBRARY_PATH=${cublas_dir:-}:${LD_LIBRARY_PATH:-}
  run_tests=("$build/tests/unit/cuda/unit_cuda")
  run_bench=("$build/bench/cuda/bench_cuda")
  how="built on this machine in $build ($(elapsed) s)"
fi
[[ -f models/SmolLM2-135M-Instruct.Q4_1.gguf ]] && export LLMSERVE_TEST_MODEL=$PWD/models/SmolLM2-135M-Instruct.Q4_1.gguf

gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "nvidia-smi unavailable")
echo "== tests ($how) =="
timeout 180 "${run_tests[@]}" --gtest_color=no >"$log/tests.txt" 2>&1
test_rc=$?
cat "$log/tests.txt"
echo "== benchmarks =="
timeout 240 "${run_bench[@]}" --model-preset llama-3.1-8b >"$log/bench.txt" 2>&1
bench_rc=$?
cat "$log/bench.txt"

{
  echo "# GPU check $date_tag"
  echo
  echo "- GPU: $gpu"
  echo "- Binaries: $how; commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "- Tests: exit $test_rc; $(grep -E '^\[  (PASSED|FAILED|SKIPPED)  \] [0-9]+ test' "$log/tests.txt" | tr '\n' ' ')"
  echo "- Total time: $(elapsed) s"
  echo
  if grep -q "KERNEL MISMATCH\|FAILED\|Failure" "$log/tests.txt"; then
    echo "## Failures"
    echo
    echo '```'
    grep -E "KERNEL MISMATCH|\[  FAILED  \]|Failure|differs|error" "$log/tests.txt" | head -60
    echo '```'
    echo
  fi
  grep "^\[ model" "$log/tests.txt" || true
  echo
  echo "## Benchmarks (exit $bench_rc)"
  echo
  cat "$log/bench.txt"
} >"$report"
[[ -n ${OUT:-} ]] && cp "$report" "$log/tests.txt" "$log/bench.txt" "$OUT/" 2>/dev/null
echo "report: $report ($(elapsed) s)"
[[ $test_rc == 0 && $bench_rc == 0 ]]
