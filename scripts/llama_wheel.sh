#!/usr/bin/env bash
# Build the llama-cpp-python wheel once and keep it in a cache outside the repository.
#
# PyPI has only sdists of llama-cpp-python, so every fresh venv would compile llama.cpp again
# (about 5 minutes on 2 cores). This builds it once per (version, build flags, Python, platform)
# into ${CALLSCOPE_WHEEL_CACHE:-~/.cache/callscope/wheels}/<flags hash>/ and prints that folder;
# the Makefile then installs with `pip install --find-links <folder> llama-cpp-python==<version>`.
#
# The flags are portable (no -march=native): a wheel built on one x86-64 machine with AVX2/FMA/F16C
# runs on any other that has them. Override with LLAMA_CMAKE_ARGS (another cache folder is used).
#
#   scripts/llama_wheel.sh PYTHON VERSION     e.g. scripts/llama_wheel.sh .venv/bin/python 0.3.16
set -euo pipefail

python=${1:?usage: llama_wheel.sh PYTHON VERSION}
version=${2:?usage: llama_wheel.sh PYTHON VERSION}
cmake_args=${LLAMA_CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}

# One folder per set of flags, so a wheel built with other flags is never picked up by mistake.
flags_hash=$(printf '%s' "$cmake_args" | sha256sum | cut -c1-12)
cache=${CALLSCOPE_WHEEL_CACHE:-$HOME/.cache/callscope/wheels}/$flags_hash
pytag=$("$python" -P -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
platform=$("$python" -P -c 'import sysconfig; print(sysconfig.get_platform().replace("-", "_").replace(".", "_"))')

shopt -s nullglob
existing=("$cache"/llama_cpp_python-"$version"-"$pytag"-"$pytag"-*"$platform"*.whl)
if ((${#existing[@]} == 0)); then
  mkdir -p "$cache"
  # Built into a private folder and moved in at the end: an interrupted or concurrent build never
  # leaves a half-written wheel where the next install would find it.
  work=$(mktemp -d "$cache/.build.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  echo "building llama-cpp-python $version (CMAKE_ARGS=$cmake_args), once, into $cache ..." >&2
  CMAKE_ARGS="$cmake_args" "$python" -P -m pip wheel --quiet --no-deps --no-binary llama-cpp-python \
    "llama-cpp-python==$version" -w "$work" >&2
  printf '%s\n' "$cmake_args" >"$cache/CMAKE_ARGS"
  mv "$work"/llama_cpp_python-*.whl "$cache"/
fi
echo "$cache"
