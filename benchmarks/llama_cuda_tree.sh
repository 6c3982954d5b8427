#!/usr/bin/env bash
# The CUDA build of llama.cpp that the GPU comparison carries (issue 36): the llama.cpp that the
# installed llama-cpp-python vendors (its sdist from PyPI), built with CMake as shared libraries with
# CUDA, for the llama-server and mtmd targets, RPATH $ORIGIN, so that `gpu_check.sh --pack` can put
# its libraries under the llama_cpp Python package and llama-server beside them: both servers then
# run one ggml. The toolkit is NVIDIA's PyPI wheels at CUDA 13.0 (the lent machines' driver, 580,
# runs 13.0), in a venv of their own. About 25 minutes on 2 cores, once; prints the build folder.
#
#   bash benchmarks/llama_cuda_tree.sh                  # then:
#   PREFILL_CUDA_BUILD=<printed folder> bash benchmarks/gpu_check.sh --pack
#   (on the lent machine, carrying .whl)  bash benchmarks/gpu_check.sh --only-vs
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-.venv/bin/python}
version=$("$py" -c 'import importlib.metadata as m; print(m.version("llama-cpp-python"))')
cuda=${CUDA_WHEELS:-13.0.88}
arch=${CUDA_ARCH:-90}
home=${CUDA_TREE:-$HOME/.cache/prefill-bench/cuda-tree-$version-cu$cuda-sm$arch}
build=$home/build
if [ -x "$build/bin/llama-server" ] && [ -f "$build/bin/libggml-cuda.so" ] && [ -f "$build/bin/libmtmd.so" ]; then
  echo "$build"; exit 0
fi
mkdir -p "$home"
if [ ! -x "$home/toolkit/bin/python" ]; then
  python3 -m venv "$home/toolkit"
  "$home/toolkit/bin/pip" install -q "nvidia-cuda-nvcc==$cuda" "nvidia-cuda-runtime==$cuda" "nvidia-cuda-crt==$cuda" \
    "nvidia-nvvm==$cuda" "nvidia-cuda-cccl==${CUDA_CCCL:-13.0.85}" "nvidia-cublas==${CUDA_CUBLAS:-13.0.2.14}" >&2
fi
cu=$(ls -d "$home"/toolkit/lib/python3*/site-packages/nvidia/cu13)
for lib in libcudart libcublas libcublasLt; do [ -e "$cu/lib/$lib.so" ] || ln -s "$lib.so.13" "$cu/lib/$lib.so"; done
[ -e "$cu/lib64" ] || ln -s lib "$cu/lib64"
if [ ! -f "$home/src/CMakeLists.txt" ]; then
  "$py" -m pip download -q --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$home/sdist" >&2
  tar -C "$home/sdist" -xzf "$home/sdist/llama_cpp_python-$version.tar.gz"
  rm -rf "$home/src" && mv "$home/sdist/llama_cpp_python-$version/vendor/llama.cpp" "$home/src"
fi
export CUDA_HOME=$cu PATH=$cu/bin:$PATH LD_LIBRARY_PATH=$cu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cmake -S "$home/src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
  -DGGML_CUDA=ON -DGGML_CUDA_NO_VMM=ON -DGGML_NATIVE=OFF -DCMAKE_CUDA_ARCHITECTURES="$arch" \
  -DCUDAToolkit_ROOT="$cu" -DCMAKE_CUDA_COMPILER="$cu/bin/nvcc" \
  -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF \
  -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
  -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN' >&2
ninja -C "$build" -j "$(nproc)" llama-server mtmd >&2
echo "$build"
