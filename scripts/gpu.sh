#!/usr/bin/env bash
# Run the CUDA backend on the GPU machine (an NVIDIA H200) over the whole corpus.
#
# The GPU machine has the NVIDIA driver and the `nvidia-cuda-nvrtc` wheel but no Rust
# toolchain, so the `sarek` binary is built here and carried there:
#
#   scripts/gpu.sh build    build `sarek` (release, default features) and stage it in .gpu/
#   scripts/gpu.sh traps    on the GPU machine: only the bounded-recursion trap checks
#   scripts/gpu.sh remote   what runs on the GPU machine: `sarek devices`, then
#                           `sarek verify FILE --backends cuda` for every corpus file, a summary,
#                           exit 1 if any file failed (the log is also written to $OUT when set)
#   scripts/gpu.sh difftest-build   build `sarek-difftest` (release) and stage it in .gpu/ too
#   scripts/gpu.sh difftest         on the GPU machine: the findings' kernels, then generated
#                           kernels on cuda, ptx and opencl compared with interp (DIFFTEST_SEED,
#                           DIFFTEST_COUNT, DIFFTEST_JOBS: default 1, 1000, 8 workers; stops
#                           after 480 s; failures shrunk into $OUT/difftest)
#   scripts/gpu.sh bench [NAMES]   on the GPU machine: the GPU benchmark suite (benches/gpu/,
#                           issue 14) on cuda and ptx next to hand-written CUDA; CSV in $OUT, then
#                           here: python3 scripts/gpu-bench-report.py CSV (table, chart in docs/)
#   scripts/gpu.sh runtime  on the GPU machine: launch overhead, 1 GiB upload, resident saxpy 2^28
#                           (issue 12), sarek bench next to plain CUDA (benches/gpu/runtime.cu)
#   scripts/gpu.sh fusion   on the GPU machine: the fusion/skeleton measurement (issue 18),
#                           .gpu/fusion_pipeline on 2^28 floats with cuda and ptx
#   scripts/gpu.sh          build, then print the call of the device `run` tool to make:
#                             run(command="bash scripts/gpu.sh remote", carry=[".gpu"])
#
# The binary loads libcuda and libnvrtc at run time: the remote step finds libnvrtc in the
# machine's Python packages and points SAREK_NVRTC_LIB at it. Compiled kernels are cached in
# $XDG_CACHE_HOME/sarek/cuda (a fresh machine starts empty).
set -euo pipefail
cd "$(dirname "$0")/.."

build() {
    cargo build --release -p sarek
    mkdir -p .gpu
    cp target/release/sarek .gpu/sarek
    strip .gpu/sarek
    cargo build --release -p sarek --example fusion_pipeline
    cp target/release/examples/fusion_pipeline .gpu/fusion_pipeline
    strip .gpu/fusion_pipeline
    # .gpu/ travels with the run tool's `carry`; keep it out of git.
    local exclude
    exclude=$(git rev-parse --git-path info/exclude)
    mkdir -p "$(dirname "$exclude")"
    grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >> "$exclude"
    echo "staged .gpu/sarek ($(du -h .gpu/sarek | cut -f1))"
}

find_nvrtc() {
    local dirs
    dirs=$(python3 -c 'import site, sys; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null || true)
    for d in $dirs /usr/local/cuda/lib64 /usr/lib/x86_64-linux-gnu; do
        [ -d "$d" ] || continue
        local f
        f=$(find "$d" -maxdepth 5 -name 'libnvrtc.so*' ! -name '*builtins*' 2>/dev/null | sort | head -n 1)
        if [ -n "$f" ]; then echo "$f"; return 0; fi
    done
    return 1
}

# The carried binary, NVRTC and the kernel cache, for the steps that run on the GPU machine.
remote_env() {
    [ -x .gpu/sarek ] || { echo "no .gpu/sarek: run 'scripts/gpu.sh build' here and carry .gpu" >&2; exit 2; }
    if nvrtc=$(find_nvrtc); then
        export SAREK_NVRTC_LIB=$nvrtc
        export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
    export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/sarek-cache}
}

remote() {
    local log=${OUT:-/tmp}/gpu-verify.log
    local bin=.gpu/sarek
    remote_env
    {
        echo "== machine"
        nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
        echo "libnvrtc: ${SAREK_NVRTC_LIB:-not found}"
        echo "== sarek devices"
        "$bin" devices || true
        local backends=${SAREK_GPU_BACKENDS:-cuda,ptx}
        local pass=0 fail=0 refused=0 unavailable=0 failed=() refusals=()
        local out=/tmp/sarek-verify-one.txt
        for f in tests/kernels/*.sarek tests/conformance/*.sarek; do
            echo "== sarek verify $f --backends $backends"
            set +e
            "$bin" verify "$f" --backends "$backends" > "$out" 2>&1
            local rc=$?
            set -e
            cat "$out"
            # Exit 1 is a mismatch or an error; exit 2 a named backend that is unavailable or
            # refuses the kernel (located): only MISMATCH and ERROR cells are failures.
            case $rc in
                0) pass=$((pass + 1)) ;;
                2) if grep -q 'was requested but cannot run kernel' "$out"; then
                       refused=$((refused + 1)); refusals+=("$f")
                   else
                       unavailable=$((unavailable + 1)); failed+=("$f (unavailable)")
                   fi ;;
                *) if grep -qE 'MISMATCH|ERROR' "$out"; then
                       fail=$((fail + 1)); failed+=("$f (exit $rc)")
                   else
                       refused=$((refused + 1)); refusals+=("$f")
                   fi ;;
            esac
        done
        echo "== summary: $pass files agree with interp on $backends; $refused agree where not refused (located refusals); $fail disagree or fail; $unavailable unavailable"
        for f in "${refusals[@]}"; do echo "   refused somewhere: $f"; done
        for f in "${failed[@]}"; do echo "   $f"; done
        # A second pass over one file shows the on-disk cache at work (no NVRTC).
        echo "== cache: $(ls "$XDG_CACHE_HOME/sarek/cuda" 2>/dev/null | grep -c '\.cubin$') compiled modules cached"
        echo "== second verify of one file (modules come from the disk cache, no NVRTC)"
        /usr/bin/time -f "%e s wall" "$bin" verify tests/kernels/saxpy.sarek --backends cuda >/dev/null || true
        traps
        bench
        [ "$fail" -eq 0 ] && [ "$unavailable" -eq 0 ]
    } 2>&1 | tee "$log"
    return "${PIPESTATUS[0]}"
}

# Bounded recursion past its depth must fail, located, on the GPU backends too (exit 1).
traps() {
    local bin=.gpu/sarek
    for b in ${SAREK_GPU_BACKENDS:-cuda,ptx} opencl; do
        for b1 in ${b//,/ }; do
            for km in chain:5 chain:8 tree:7 tree:9; do
                echo "== trap check: run tests/traps/inline_depth.sarek --kernel ${km%:*} m=${km#*:} --backend $b1"
                set +e
                "$bin" run tests/traps/inline_depth.sarek --kernel "${km%:*}" --arg m="${km#*:}" \
                    --arg n=1024 --backend "$b1" 2>&1 | tail -n 6
                echo "exit ${PIPESTATUS[0]}"
                set -e
            done
        done
    done
}

# Issue 5/7 figures: mandelbrot 1024x1024 (256 iterations) and tiled matmul 256x256 per backend.
bench() {
    local bin=.gpu/sarek
    for b in ${SAREK_GPU_BENCH_BACKENDS:-cuda ptx cpu}; do
        echo "== bench mandelbrot 1024x1024, 256 iterations, backend $b"
        "$bin" bench tests/kernels/mandelbrot.sarek --kernel mandelbrot --backend "$b" --size 1048576 \
            --grid 64,64 --block 16,16 --arg width=1024 --arg height=1024 --arg max_iter=256 --reps 5 || true
        echo "== bench matmul_tiled 256x256, backend $b"
        "$bin" bench tests/kernels/matmul_tiled.sarek --kernel matmul_tiled --backend "$b" --size 65536 \
            --grid 16,16 --block 16,16 --arg n=256 --reps 5 || true
    done
}

# Issue 19: random kernels on the GPU backends (docs/difftest.md).
difftest_build() {
    cargo build --release -p sarek-difftest
    mkdir -p .gpu
    cp target/release/sarek-difftest .gpu/sarek-difftest
    strip .gpu/sarek-difftest
    local exclude
    exclude=$(git rev-parse --git-path info/exclude)
    mkdir -p "$(dirname "$exclude")"
    grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >> "$exclude"
    echo "staged .gpu/sarek-difftest ($(du -h .gpu/sarek-difftest | cut -f1))"
}

difftest() {
    [ -x .gpu/sarek-difftest ] || { echo "no .gpu/sarek-difftest: run 'scripts/gpu.sh difftest-build' here and carry .gpu" >&2; exit 2; }
    if nvrtc=$(find_nvrtc); then
        export SAREK_NVRTC_LIB=$nvrtc
        export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
    export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/sarek-cache}
    local status=0
    # The findings first, every @run directive of each (the partial-warp ones are the
    # CUDA/PTX fix of issue 19 waiting for this GPU's confirmation).
    echo "== findings (open and fixed) on ${DIFFTEST_BACKENDS:-cuda,ptx,opencl}"
    .gpu/sarek-difftest --replay crates/sarek-difftest/findings/open/*.sarek \
        crates/sarek-difftest/findings/fixed/*.sarek \
        --backends "${DIFFTEST_BACKENDS:-cuda,ptx,opencl}" --validators cuda,ptx \
        --out "${OUT:-/tmp}/difftest-findings" || status=1
    echo "== random kernels"
    .gpu/sarek-difftest --seed "${DIFFTEST_SEED:-1}" --count "${DIFFTEST_COUNT:-1000}" \
        --backends "${DIFFTEST_BACKENDS:-cuda,ptx,opencl}" --validators cuda,ptx \
        --jobs "${DIFFTEST_JOBS:-8}" --time-limit 480 --shrink-seconds 30 --progress 100 \
        --out "${OUT:-/tmp}/difftest" || status=1
    return $status
}

# Issue 18: a 3-stage element-wise pipeline on 2^28 float32, fused vs unfused, both as a
# `sarek::Pipeline` on resident buffers (the `host transfers` of each: 2 up, 1 down over all
# the runs), and the reduce skeleton against the copy bandwidth (map skeleton, and the
# runtime's device-to-device `copy_from`), per backend.
fusion() {
    for b in ${SAREK_GPU_BENCH_BACKENDS:-cuda ptx}; do
        echo "== fusion_pipeline --size ${SAREK_FUSION_SIZE:-268435456}, backend $b"
        SAREK_BACKEND=$b .gpu/fusion_pipeline --size "${SAREK_FUSION_SIZE:-268435456}" --reps 5 || true
    done
}

# Issue 12: launch overhead, upload and download bandwidth and a resident saxpy pipeline,
# `sarek bench` next to the same work in plain CUDA (benches/gpu/runtime.cu). Compare the
# `download:` line of the 2^28 bench (1 GiB of y into a fresh Vec, through pinned staging;
# x is only read, so it is not downloaded) with `download_1gib_pageable_touched_gbps` of the
# plain program (the issue asks for at least 80% of it), and its `bandwidth:` line (x read,
# y read and written: 3 GiB per launch) with the kernel time of `saxpy28_100_launches_ms`.
runtime() {
    local bin=.gpu/sarek nvcc
    nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
    echo "== plain CUDA (benches/gpu/runtime.cu)"
    "$nvcc" -O3 -arch=sm_90 -o /tmp/runtime_hand benches/gpu/runtime.cu && /tmp/runtime_hand
    for b in ${SAREK_GPU_BENCH_BACKENDS:-cuda ptx}; do
        echo "== sarek bench saxpy, 1 element, 10000 launches, backend $b"
        "$bin" bench tests/kernels/saxpy.sarek --kernel saxpy --backend "$b" --size 1 \
            --arg a=2.0 --arg n=1 --warmup 100 --reps 10000 || true
        echo "== sarek bench saxpy, 2^28 elements (1 GiB per vector), 100 launches, backend $b"
        "$bin" bench tests/kernels/saxpy.sarek --kernel saxpy --backend "$b" --size 268435456 \
            --arg a=2.0 --arg n=268435456 --warmup 0 --reps 100 || true
    done
}

# Issue 17 on the H200: (1) shift counts >= 32 and the other operator edge cases agree with
# interp on cuda/ptx (CUDA's `1u << n` was undefined); (2) the fault kernels are reported
# located in checked mode; (3) the cost of checked mode: each benchmark kernel timed with
# and without `--checked` (figures for docs/benchmarks.md, "Checked mode").
checked() {
    local bin=.gpu/sarek
    local backends=${SAREK_GPU_BACKENDS:-cuda,ptx}
    for f in tests/conformance/c25_shifts.sarek tests/conformance/c26_int_arith.sarek; do
        echo "== verify $f --backends $backends"
        "$bin" verify "$f" --backends "$backends" || true
    done
    for b in ${backends//,/ } opencl; do
        for f in tests/reliability/faults/*.sarek; do
            echo "== checked fault: $f on $b (expect: $(grep -o '@fault [^*]*' "$f" | head -n 1))"
            set +e
            "$bin" run "$f" --kernel k --backend "$b" --size 256 --arg n=200 2>&1 | head -n 3
            echo "exit ${PIPESTATUS[0]}"
            set -e
        done
    done
    for b in ${backends//,/ }; do
        for mode in "" --checked; do
            echo "== bench mandelbrot 1024x1024 $b ${mode:-unchecked}"
            "$bin" bench tests/kernels/mandelbrot.sarek --kernel mandelbrot --backend "$b" --size 1048576 \
                --grid 64,64 --block 16,16 --arg width=1024 --arg height=1024 --arg max_iter=256 --reps 10 $mode || true
            echo "== bench matmul_tiled 256x256 $b ${mode:-unchecked}"
            "$bin" bench tests/kernels/matmul_tiled.sarek --kernel matmul_tiled --backend "$b" --size 65536 \
                --grid 16,16 --block 16,16 --arg n=256 --reps 10 $mode || true
        done
    done
}

case "${1:-all}" in
    build) build ;;
    difftest-build) difftest_build ;;
    difftest) difftest ;;
    remote) remote ;;
    traps) remote_env; traps ;;
    fusion) remote_env; fusion ;;
    runtime) remote_env; runtime ;;
    bench) remote_env; bash scripts/gpu-bench.sh "${2:-}" ;;
    # run(command="bash scripts/gpu.sh checked", carry=[".gpu"]) after `scripts/gpu.sh build`
    checked) remote_env; checked 2>&1 | tee "${OUT:-/tmp}/gpu-checked.log" ;;
    all)
        build
        cat <<'EOF'
Now run on the GPU machine (device `run` tool, kind nvidia-h200):
  run(command="bash scripts/gpu.sh remote", carry=[".gpu"], timeout_s=600)
The log comes back as $OUT/gpu-verify.log.
EOF
        ;;
    *) echo "usage: $0 [build|remote|traps|bench|runtime|fusion|difftest-build|difftest|checked]" >&2; exit 2 ;;
esac
