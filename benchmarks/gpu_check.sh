#!/usr/bin/env bash
# The GPU check, for the day a machine with an NVIDIA GPU is lent (one run, at most 10 minutes on a
# 16-core H200 machine). Prints one JSON object (benchmarks/gpu_check.py has the measurements).
#
#   benchmarks/gpu_check.sh          run it: a CUDA llama.cpp, then the check
#   benchmarks/gpu_check.sh --pack   here, beforehand: put what a bare, offline GPU machine lacks into
#                                    .whl/ (ignored by git; carry it): the CUDA llama_cpp package built
#                                    here, its symlinks restored, xz-packed, and the Python wheels the
#                                    check imports that the machine's image does not have (for Python
#                                    $PACK_PYTHON_VERSION, default 3.12, the image's). With
#                                    PREFILL_CUDA_BUILD=<a CMake build folder of the vendored llama.cpp with
#                                    CUDA, shared libraries, and the llama-server and mtmd targets:
#                                    benchmarks/llama_cuda_tree.sh makes it>, its
#                                    libraries and llama-server are packed instead of a wheel: the check then
#                                    also runs benchmarks/vs_llama_server.py on the GPU, both servers on one ggml
#
# Where the CUDA llama_cpp comes from, first found wins:
#   1. .whl/llama_cpp_cuda.tar.xz (from --pack);
#   2. a wheel built here by scripts/llama_build.py (PREFILL_CUDA_WHEEL, or its cache folder for sm_90);
#   3. a build for sm_90 with every core, from .whl/llama_cpp_python-*.tar.gz (or PyPI where reachable),
#      with the machine's own nvcc, or NVIDIA's toolkit wheels (scripts/llama_build.py) without one.
# The CUDA runtime (libcudart, libcublas) is the one on the import path (nvidia/cu13/lib: the image's
# PyTorch brings it, a venv made by make run too); prefill loads it before llama_cpp.
# Without a GPU it says so, with what it could see, and exits 0.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# The repository's venv where there is one (here); on a lent machine, its image's python3.
py=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
site=${GPU_CHECK_SITE:-/tmp/prefill-gpu-check/site}
version=${LLAMA_CPP_VERSION:-0.3.36}
say() { echo "gpu_check: $*" >&2; }

cuda_wheel() {  # the wheel scripts/llama_build.py built for sm_90 here, if any
  if [ -n "${PREFILL_CUDA_WHEEL:-}" ]; then echo "$PREFILL_CUDA_WHEEL"; return; fi
  "$py" scripts/llama_build.py plan --cuda 1 --arch 90 --version "$version" 2>/dev/null |
    "$py" -c 'import json,sys; print(json.load(sys.stdin)["wheel"])'
}

unpack_wheel() {  # $1 wheel -> $2 folder, each .so copy the wheel stores turned back into a link
  "$py" - "$1" "$2" <<'PY'
import filecmp, re, sys, zipfile
from pathlib import Path
wheel, dest = sys.argv[1], Path(sys.argv[2])
zipfile.ZipFile(wheel).extractall(dest)
lib = dest / "llama_cpp" / "lib"
for f in sorted(lib.iterdir()):
    m = re.fullmatch(r"(lib.+\.so)((?:\.\d+)+)?", f.name)
    if not m or f.is_symlink():
        continue
    twins = sorted((t for t in lib.iterdir() if t != f and t.name.startswith(f.name + ".") and not t.is_symlink()),
                   key=lambda t: len(t.name))
    twin = next((t for t in twins if filecmp.cmp(f, t, shallow=False)), None)
    if twin is not None:
        f.unlink()
        f.symlink_to(twin.name)
PY
}

if [ "${1:-}" = --pack ]; then
  mkdir -p .whl
  tmp=$(mktemp -d)
  if [ -n "${PACK_KEEP_LLAMA:-}" ] && [ -f .whl/llama_cpp_cuda.tar.xz ]; then
    say "keeping .whl/llama_cpp_cuda.tar.xz"
  elif [ -n "${PREFILL_CUDA_BUILD:-}" ]; then
    # A CMake build of the vendored llama.cpp (BUILD_SHARED_LIBS, CUDA, the llama-server and mtmd targets,
    # RPATH $ORIGIN): its libraries under the venv's llama_cpp Python package, and llama-server beside them,
    # so that both servers of vs_llama_server.py run the same ggml.
    [ -f "$PREFILL_CUDA_BUILD/bin/libggml-cuda.so" ] && [ -x "$PREFILL_CUDA_BUILD/bin/llama-server" ] ||
      { say "$PREFILL_CUDA_BUILD/bin has no libggml-cuda.so or llama-server"; exit 1; }
    pkg=$("${VENV_PYTHON:-.venv/bin/python}" -c 'import importlib.util as u; print(u.find_spec("llama_cpp").submodule_search_locations[0])')
    cp -r "$pkg" "$tmp/llama_cpp"
    rm -rf "$tmp/llama_cpp/lib"/* && find "$tmp/llama_cpp" -name __pycache__ -prune -exec rm -rf {} +
    cp -P "$PREFILL_CUDA_BUILD"/bin/lib*.so* "$PREFILL_CUDA_BUILD/bin/llama-server" "$tmp/llama_cpp/lib/"
    find "$tmp/llama_cpp/lib" -type f -exec strip --strip-unneeded {} + 2>/dev/null || true
  else
    wheel=$(cuda_wheel)
    [ -n "$wheel" ] && [ -f "$wheel" ] || { say "no CUDA wheel built here (make run CUDA=1, or scripts/llama_build.py wheel --cuda 1 --arch 90)"; exit 1; }
    unpack_wheel "$wheel" "$tmp"
  fi
  [ -d "$tmp/llama_cpp" ] && tar -C "$tmp" -cf - llama_cpp | xz -9 -T0 > .whl/llama_cpp_cuda.tar.xz
  rm -rf "$tmp/llama_cpp"
  # The distributions the check imports (the CLI's parser, the engine, the server), at the venv's
  # versions, less those the image has (KINDS.md); its Python is 3.12, hence wheels for 3.12.
  venv_py=${VENV_PYTHON:-.venv/bin/python}
  mapfile -t wanted < <(QT_QPA_PLATFORM=offscreen PYTHONPATH=app "$venv_py" - <<'PY'
import importlib.metadata as md, sys
from prefill.cli import build_parser
build_parser()
import prefill.bench.side_by_side, prefill.bench.tiny_model, prefill.bench.serve_load  # noqa: E401,F401
import importlib, pkgutil, prefill.server, prefill.commands, openai  # noqa: E401,F401  (prefill serve, the clients)
for pkg in (prefill.server, prefill.commands):
    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
        importlib.import_module(m.name)
try:  # what the openai client imports only when it streams (jiter, distro): a request to a closed port
    openai.OpenAI(api_key="x", base_url="http://127.0.0.1:9/v1", max_retries=0).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}], stream=True)
except openai.APIConnectionError:
    pass
image = {"setuptools", "numpy", "pillow", "jinja2", "markupsafe", "pyyaml", "anyio", "click", "h11", "idna", "certifi",
         "typing-extensions", "typing_extensions", "sniffio", "tqdm", "requests", "filelock", "fsspec", "packaging",
         "pygments", "urllib3", "charset-normalizer", "attrs", "rich", "markdown-it-py", "mdurl", "regex"}
skip = {"prefill", "llama-cpp-python", "llama_cpp_python", "pyside6-essentials", "shiboken6", "pyside6_essentials"}
found = set()
for mod in list(sys.modules):
    for dist in md.packages_distributions().get(mod.split(".")[0], []):
        if dist.lower() not in image | skip:
            found.add(f"{dist}=={md.version(dist)}")
print("\n".join(sorted(found)))
PY
)
  # py-spy: vs_llama_server.py --profile samples Prefill's stacks with it.
  wanted+=("py-spy==${PY_SPY_VERSION:-0.4.3}")
  # Installed here for the machine's Python and xz-packed (half the size of the wheels: a device call
  # carries 64 MiB with the repository).
  target=(--python-version "${PACK_PYTHON_VERSION:-3.12}" --implementation cp --only-binary=:all:
          --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64
          --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64)
  rm -f .whl/*.whl .whl/python_site.tar.xz
  mkdir -p "$tmp/wheels" "$tmp/site"
  "$py" -m pip download -q --no-deps "${target[@]}" -d "$tmp/wheels" "${wanted[@]}" &&
    "$py" -m pip install -q --no-deps --no-index --no-compile "${target[@]}" --target "$tmp/site" "$tmp"/wheels/*.whl ||
    { say "pip download or install failed for: ${wanted[*]}"; exit 1; }
  find "$tmp/site" -name '*.so' -exec strip --strip-unneeded {} + 2>/dev/null
  tar -C "$tmp/site" --exclude=__pycache__ -cf - . | xz -9 -T0 > .whl/python_site.tar.xz
  rm -rf "$tmp"
  say "packed: $(du -sh .whl | cut -f1) in .whl/ ($(ls .whl | tr '\n' ' '); ${wanted[*]})"
  exit 0
fi

start=$(date +%s)
mkdir -p "$site"
export PYTHONUNBUFFERED=1
# 1. The Python packages the image lacks.
if [ -f .whl/python_site.tar.xz ]; then
  tar -C "$site" -xJf .whl/python_site.tar.xz || say "carried packages did not unpack"
fi
if compgen -G ".whl/*.whl" >/dev/null; then
  "$py" -m pip install -q --no-index --no-deps --no-compile --target "$site" .whl/*.whl >&2 || say "carried wheels did not install"
fi
# 2. A CUDA llama_cpp.
how=""
if [ -f .whl/llama_cpp_cuda.tar.xz ]; then
  tar -C "$site" -xJf .whl/llama_cpp_cuda.tar.xz && how="carried (.whl/llama_cpp_cuda.tar.xz)"
fi
if [ -z "$how" ]; then
  wheel=$(cuda_wheel)
  if [ -n "$wheel" ] && [ -f "$wheel" ]; then unpack_wheel "$wheel" "$site" && how="reused $wheel"; fi
fi
if [ -z "$how" ] && command -v nvidia-smi >/dev/null && nvidia-smi >/dev/null 2>&1; then
  # Build for sm_90 with every core: the machine's nvcc if it has one, else the toolkit wheels.
  src=$(compgen -G ".whl/llama_cpp_python-*.tar.gz" | head -1)
  [ -n "$src" ] || src="llama-cpp-python==$version"
  args="-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_NATIVE=OFF"
  if ! command -v nvcc >/dev/null; then
    cu13=$("$py" scripts/llama_build.py toolkit) || cu13=""
    [ -n "$cu13" ] && { args+=" -DGGML_CUDA_NO_VMM=ON -DCUDAToolkit_ROOT=$cu13 -DCMAKE_CUDA_COMPILER=$cu13/bin/nvcc"; export PATH="$cu13/bin:$PATH"; }
  fi
  say "building llama-cpp-python for sm_90 with $(nproc) jobs"
  b=$(date +%s)
  mkdir -p /tmp/prefill-gpu-check/wheel
  # --no-build-isolation: an offline machine has scikit-build-core, cmake and ninja already (KINDS.md).
  if CMAKE_ARGS="$args" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) "$py" -m pip wheel -q --no-deps --no-build-isolation \
      --no-binary llama-cpp-python -w /tmp/prefill-gpu-check/wheel "$src" > /tmp/prefill-gpu-check/build.log 2>&1; then
    unpack_wheel "$(ls /tmp/prefill-gpu-check/wheel/llama_cpp_python-*.whl | head -1)" "$site" \
      && how="built here for sm_90 in $(( $(date +%s) - b )) s"
  else
    say "the build failed: $(tail -3 /tmp/prefill-gpu-check/build.log | tr '\n' ' ')"
  fi
fi
[ -n "$how" ] || how="none found: the venv's own llama_cpp"
say "llama_cpp: $how ($(( $(date +%s) - start )) s)"
export PYTHONPATH="$site:$root/app${PYTHONPATH:+:$PYTHONPATH}" PATH="$site/bin:$PATH"  # bin: py-spy, if carried
runtime() { "$py" -c 'from prefill.engine.cuda_libs import runtime_folder as f; print(f() or "")'; }
# 3. The CUDA runtime wheels, where no nvidia/cu13/lib is on the path yet (a venv made without them).
if [ -f "$site/llama_cpp/lib/libggml-cuda.so" ] && [ -z "$(runtime)" ]; then
  "$py" -m pip install -q --no-deps --target "$site" $("$py" scripts/llama_build.py runtime) >&2 \
    || say "no CUDA runtime on the path, and pip could not install it"
fi
# 4. The check, with that llama_cpp first on the path; a llama-server carried beside it finds the CUDA
# runtime where prefill finds it.
extra=()
if [ -x "$site/llama_cpp/lib/llama-server" ]; then
  extra=(--llama-server "$site/llama_cpp/lib/llama-server")
  rt=$(runtime)
  [ -n "$rt" ] && export LD_LIBRARY_PATH="$rt${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
json=$("$py" benchmarks/gpu_check.py "${extra[@]}" "$@")
rc=$?
"$py" - "$how" "$(( $(date +%s) - start ))" "$json" <<'PY'
import json, sys
how, seconds, text = sys.argv[1], int(sys.argv[2]), sys.argv[3]
try:
    out = json.loads(text.strip().splitlines()[-1])
except (ValueError, IndexError):
    out = {"error": "gpu_check.py printed no JSON", "output": text[-2000:]}
out["llama_cpp_source"] = how
out["wall_s"] = seconds
print(json.dumps(out))
PY
exit $rc
