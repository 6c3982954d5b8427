#!/usr/bin/env bash
# Builds the llama-cpp-python wheel an installer carries, for one variant, into
# packaging/wheels/<variant>/ (a folder per variant: pip's wheel cache does not tell
# builds with different CMAKE_ARGS apart, so each variant also gets its own cache).
#
#   packaging/build_llama_wheel.sh cpu-portable   # any x86-64 CPU; best kernels picked at run time
#   packaging/build_llama_wheel.sh cuda           # cpu-portable + the CUDA backend (Linux: NVIDIA's
#                                                 # PyPI toolkit wheels, as `make run` uses; Windows: nvcc on PATH)
#   packaging/build_llama_wheel.sh metal          # macOS on Apple silicon
#
# Env: PYTHON (the interpreter to build for, default python3), LLAMA_CPP_VERSION,
#      CMAKE_BUILD_PARALLEL_LEVEL (default: all cores), PIP_CACHE_DIR (default: one per variant and set of flags),
#      CUDA_ARCHS (cuda: the GPU architectures, "86 90"; on Linux default the seven below, ~35 min each on 2 cores).
set -euo pipefail

variant=${1:?usage: build_llama_wheel.sh cpu-portable|cuda|metal}
here=$(cd "$(dirname "$0")" && pwd)
# CMake on Windows wants C:/... rather than Git Bash's /c/...
cmake_here=$(cygpath -m "$here" 2>/dev/null || echo "$here")
version=${LLAMA_CPP_VERSION:-0.3.36}
python=${PYTHON:-python3}
out="$here/wheels/$variant"

# GGML_NATIVE=OFF: no -march=native. GGML_BACKEND_DL + GGML_CPU_ALL_VARIANTS: one CPU module per
# processor generation (x64, sse42, sandybridge, haswell, skylakex, zen4, ...), the best one chosen
# when the app starts. The include file installs those modules into the wheel, which
# llama-cpp-python's own CMakeLists.txt does not do.
portable="-DGGML_NATIVE=OFF -DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON"
portable+=" -DCMAKE_PROJECT_llama_cpp_INCLUDE=$cmake_here/cmake/install_ggml_backends.cmake"
case "$variant" in
  cpu-portable) args="$portable" ;;
  # Linux: a fat binary for the cards people own, Turing (75) to Blackwell (100, 120), CUDA 13
  # builds nothing older; the toolkit is NVIDIA's wheels in a build-only venv (as for `make run`),
  # which have no libcuda.so (the driver's) to link: GGML_CUDA_NO_VMM. Windows: the system
  # toolkit on PATH and ggml's default architectures, unless CUDA_ARCHS is given.
  cuda) args="$portable -DGGML_CUDA=ON"
        if [ "$(uname -s)" = Linux ]; then
          cu13=$("$python" "$here/../scripts/llama_build.py" toolkit)
          archs=${CUDA_ARCHS:-75;80;86;89;90;100;120}
          args+=" -DGGML_CUDA_NO_VMM=ON -DCUDAToolkit_ROOT=$cu13 -DCMAKE_CUDA_COMPILER=$cu13/bin/nvcc"
          export CUDA_HOME="$cu13" PATH="$cu13/bin:$PATH"
        else
          archs=${CUDA_ARCHS:-}
        fi
        if [ -n "$archs" ]; then args+=" -DCMAKE_CUDA_ARCHITECTURES=${archs// /;}"; fi ;;
  # Apple silicon: one CPU generation family, Metal built in (llama-cpp-python turns it on).
  metal) args="-DGGML_NATIVE=OFF -DGGML_METAL=ON" ;;
  *) echo "unknown variant: $variant" >&2; exit 2 ;;
esac

case "$(uname -s)" in
  MINGW*|MSYS*|CYGWIN*) cores=${NUMBER_OF_PROCESSORS:-2} ;;
  Darwin) cores=$(sysctl -n hw.ncpu) ;;
  *) cores=$(nproc) ;;
esac

mkdir -p "$out"
rm -f "$out"/llama_cpp_python-*.whl
export CMAKE_ARGS="$args ${EXTRA_CMAKE_ARGS:-}"
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$cores}
# Pip's cache keys a built wheel by the source only: give each set of build flags a cache of its own
# (the include file's path varies between checkouts, so its contents count instead).
key=$( { echo "$version $args ${EXTRA_CMAKE_ARGS:-}" | sed "s|$cmake_here||"; \
         cat "$here/cmake/install_ggml_backends.cmake"; } | cksum | cut -d' ' -f1)
export PIP_CACHE_DIR=${PIP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/prefill-pip/$variant-$key}
echo "llama-cpp-python $version, variant $variant"
echo "CMAKE_ARGS=$CMAKE_ARGS"
start=$(date +%s)
"$python" -m pip wheel --no-deps --no-binary llama-cpp-python \
  "llama-cpp-python==$version" -w "$out"
echo "built in $(( $(date +%s) - start )) s: $(ls "$out"/llama_cpp_python-*.whl)"
"$python" "$here/tools/check_llama_wheel.py" "$variant" "$out"/llama_cpp_python-*.whl
