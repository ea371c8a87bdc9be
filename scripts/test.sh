#!/usr/bin/env bash
# Install what the tests need when it is missing, then run every test of the workspace.
#
# Idempotent and quiet: packages already present are not touched. System packages come from
# apt (PoCL for OpenCL, Mesa lavapipe for Vulkan/wgpu, glslang and spirv-tools for GLSL
# validation, clang for the Metal and OpenCL syntax checks); NVRTC and ptxas come from NVIDIA's
# PyPI wheels, so no CUDA toolkit or GPU is needed. Set SAREK_LINT=1 to also require
# `cargo fmt --check` and `cargo clippy -D warnings`.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'test.sh: %s\n' "$*" >&2; }

# --- system packages (apt) -------------------------------------------------------------
apt_pkgs=(mesa-vulkan-drivers libvulkan1 pocl-opencl-icd ocl-icd-opencl-dev glslang-tools spirv-tools clang)
apt_pkgs+=(hipcc) # HIP validation (crates/sarek-compiler/tests/all/hip_validate.rs)
missing=()
for p in "${apt_pkgs[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    if command -v apt-get >/dev/null 2>&1; then
        log "installing ${missing[*]}"
        $sudo apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
            "${missing[@]}" >/dev/null
    else
        log "no apt-get: cannot install ${missing[*]}; the tests needing them will skip"
    fi
fi

# --- Python wheels: numpy (npy fixtures), NVRTC and ptxas ------------------------------
py=$(command -v python3 || true)
if [ -n "$py" ]; then
    pip_missing=()
    "$py" -c 'import numpy' 2>/dev/null || pip_missing+=(numpy)
    nv_root=$("$py" -c 'import nvidia, os; print(list(nvidia.__path__)[0])' 2>/dev/null || true)
    compgen -G "${nv_root:-/nonexistent}/cu*/lib/libnvrtc.so*" >/dev/null || pip_missing+=(nvidia-cuda-nvrtc)
    compgen -G "${nv_root:-/nonexistent}/cu*/bin/ptxas" >/dev/null || pip_missing+=(nvidia-cuda-nvcc)
    if ((${#pip_missing[@]})); then
        log "pip installing ${pip_missing[*]}"
        "$py" -m pip install -q --disable-pip-version-check "${pip_missing[@]}" >/dev/null
    fi
    nv_root=$("$py" -c 'import nvidia, os; print(list(nvidia.__path__)[0])' 2>/dev/null || true)
    for d in "$nv_root"/cu*; do
        [ -d "$d/lib" ] && export LD_LIBRARY_PATH="$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        [ -d "$d/bin" ] && export PATH="$d/bin:$PATH"
    done
else
    log "no python3: numpy fixtures and NVRTC/ptxas checks will skip"
fi

# --- tests ------------------------------------------------------------------------------
# Absence of these runtimes is a failure, not a skip (see ARCHITECTURE.md, Tests).
export SAREK_REQUIRE_BACKENDS="${SAREK_REQUIRE_BACKENDS:-wgpu,vulkan,opencl}"
[ "${SAREK_REQUIRE_BACKENDS}" = "all" ] || SAREK_REQUIRE_BACKENDS+=",hip" # hipcc is installed above
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

if [ "${SAREK_LINT:-0}" = 1 ]; then
    cargo fmt --all --check
    cargo clippy --workspace --all-targets --quiet -- -D warnings
fi
cargo test --workspace --quiet "$@"

# --- the browser playground -------------------------------------------------------------
# crates/sarek-wasm built for wasm32 and playground/ served on 127.0.0.1, tested in Debian's
# chromium (WebGPU on its built-in SwiftShader Vulkan, headless) through Playwright
# (playground/tests/browser.py; about 20 s once installed). As for the GPU runtimes above, a
# chromium, playwright or wasm32 target that cannot be installed is a failure, not a skip;
# SAREK_PLAYGROUND=0 leaves the section out (a machine without apt, say).
if [ "${SAREK_PLAYGROUND:-1}" != 0 ]; then
    if ! dpkg -s chromium >/dev/null 2>&1; then
        log "installing chromium"
        sudo=""
        [ "$(id -u)" -ne 0 ] && sudo="sudo"
        $sudo apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
    fi
    if ! python3 -c 'import playwright' 2>/dev/null; then
        log "pip installing playwright (the browser is Debian's chromium: no playwright install)"
        python3 -m pip install -q --disable-pip-version-check playwright >/dev/null
    fi
    if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
        log "adding the wasm32-unknown-unknown target"
        rustup target add wasm32-unknown-unknown >/dev/null
    fi
    target_dir="${CARGO_TARGET_DIR:-target}"
    cargo build --quiet -p sarek
    scripts/playground.sh --build "$target_dir/playground"
    timeout 600 python3 playground/tests/browser.py --site "$target_dir/playground" \
        --cli "$target_dir/debug/sarek" --artifacts "$target_dir/playground-test"
fi
