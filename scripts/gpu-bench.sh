#!/usr/bin/env bash
# The GPU benchmark suite (benches/gpu/): each kernel of benches/gpu/suite.tsv in Sarek on
# `cuda` and `ptx`, next to the same algorithm written by hand in CUDA (benches/gpu/hand.cu,
# nvcc -O3 --fmad=false). Runs on the GPU machine, called by `scripts/gpu.sh bench`:
#
#   run(command="bash scripts/gpu.sh bench", carry=[".gpu"])
#
# Writes $OUT/gpu-bench.csv (name,impl,median_ms,min_ms) and the raw logs; turn the CSV into
# the table and chart with `python3 scripts/gpu-bench-report.py CSV` here.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/gpu-bench}
mkdir -p "$out"
csv=$out/gpu-bench.csv
log=$out/gpu-bench.log
bin=${SAREK_BIN:-.gpu/sarek}
backends=${SAREK_BENCH_BACKENDS:-cuda,ptx}
reps=${SAREK_BENCH_REPS:-20}
# Extra bench flags (e.g. --checked) and a suffix for the CSV column they produce.
flags=${SAREK_BENCH_FLAGS:-}
tag=${SAREK_BENCH_TAG:-}
only=${1:-}

nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -s "$csv" ] || echo "name,impl,median_ms,min_ms" > "$csv"
{
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader || true
    if [ -z "$tag" ]; then
        "$nvcc" -O3 --fmad=false -arch=sm_90 -o /tmp/hand benches/gpu/hand.cu &&
            "$nvcc" -O3 --fmad=true -arch=sm_90 -o /tmp/hand_fma benches/gpu/hand.cu
    fi
} >> "$log" 2>&1
names=()
while IFS=$'\t' read -r name _; do
    [[ $name == \#* || -z $name ]] && continue
    [[ -n $only && ,$only, != *,$name,* ]] && continue
    names+=("$name")
done < benches/gpu/suite.tsv
if [ -z "$tag" ] && [ -x /tmp/hand ]; then
    /tmp/hand "${names[@]}" 2>>"$log" | sed 's/^\([^,]*\),/\1,hand,/' >> "$csv"
    /tmp/hand_fma "${names[@]}" 2>>"$log" | sed 's/^\([^,]*\),/\1,hand_fma,/' >> "$csv"
fi

while IFS=$'\t' read -r name file kernel size grid block args _bytes _flops; do
    [[ $name == \#* || -z $name ]] && continue
    [[ -n $only && ,$only, != *,$name,* ]] && continue
    argv=()
    for a in $args; do argv+=(--arg "$a"); done
    for b in ${backends//,/ }; do
        echo "== $name on $b" >> "$log"
        res=$("$bin" bench "$file" --kernel "$kernel" --backend "$b" --size "$size" \
            --grid "$grid" --block "$block" "${argv[@]}" --warmup 3 --reps "$reps" $flags 2>&1)
        echo "$res" >> "$log"
        # "kernel:     median 0.965 ms, min 0.950 ms (device timer)"
        med=$(echo "$res" | sed -n 's/^kernel: *median \([0-9.]*\) ms.*/\1/p' | head -n1)
        min=$(echo "$res" | sed -n 's/^kernel: *median .*, min \([0-9.]*\) ms.*/\1/p' | head -n1)
        [ -n "$med" ] && echo "$name,$b$tag,$med,$min" >> "$csv"
    done
done < benches/gpu/suite.tsv
cat "$csv"
