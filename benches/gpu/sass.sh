#!/usr/bin/env bash
# Static comparison of the suite's machine code, no GPU needed: each kernel of
# benches/gpu/suite.tsv through Sarek's PTX generator and ptxas, next to the hand-written CUDA
# (benches/gpu/hand.cu, nvcc -O3 --fmad=false), both for sm_90 (H200). Prints registers, SASS
# instructions, global and shared loads, and the instructions of the hottest loop (the
# longest backward branch's body), per kernel:
#
#   benches/gpu/sass.sh [NAME,NAME...]       (SAREK=path/to/sarek, default target/debug/sarek)
#
# nvcc, ptxas and cuobjdump come from PATH or from the `nvidia-cuda-nvcc` pip wheel (as in
# scripts/test.sh). Issue 14's figures in docs/benchmarks.md were taken with it.
set -euo pipefail
cd "$(dirname "$0")/../.."
sarek=${SAREK:-target/debug/sarek}
only=${1:-}
if ! command -v ptxas >/dev/null; then
    nv_root=$(python3 -c 'import nvidia; print(list(nvidia.__path__)[0])' 2>/dev/null || true)
    for d in "${nv_root:-/nonexistent}"/cu*/bin; do PATH=$d:$PATH; done
fi
for tool in nvcc ptxas cuobjdump; do
    command -v "$tool" >/dev/null || { echo "sass.sh: $tool not found" >&2; exit 2; }
done
[ -x "$sarek" ] || { echo "sass.sh: no $sarek (cargo build -p sarek, or set SAREK)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Instructions of one function's SASS listing (stdin), one per line without addresses.
instructions() { grep -E '^\s+/\*[0-9a-f]+\*/' | sed -E 's@^\s+/\*([0-9a-f]+)\*/\s+@\1 @; s@\s*/\*.*@@; s@ ;$@@'; }

# "regs instrs LDG LDS loop" of a listing file (lines "ADDR INSTR").
summarise() {
    local f=$1 regs=$2
    local loop
    # The longest backward branch: its distance in instructions (16 bytes each on sm_90).
    loop=$(python3 -c '
import re, sys
best = 0
for line in open(sys.argv[1]):
    addr, _, text = line.partition(" ")
    m = re.search(r"BRA [^;]*?(0x[0-9a-f]+)", text)
    if m and int(m.group(1), 16) < int(addr, 16):
        best = max(best, (int(addr, 16) - int(m.group(1), 16)) // 16 + 1)
print(best)' "$f")
    printf '%5s %6s %4s %4s %5s' "$regs" "$(wc -l < "$f")" "$(grep -c 'LDG' "$f" || true)" \
        "$(grep -c 'LDS' "$f" || true)" "$loop"
}

nvcc -O3 --fmad=false -arch=sm_90 -cubin -o "$work/hand.cubin" benches/gpu/hand.cu \
    -Xptxas -v 2> "$work/hand.log"
cuobjdump -sass "$work/hand.cubin" > "$work/hand.sass"

printf '%-18s | %5s %6s %4s %4s %5s | %5s %6s %4s %4s %5s\n' kernel regs instr LDG LDS loop \
    regs instr LDG LDS loop
printf '%-18s | %-29s | %-29s\n' "" "sarek ptx" "hand CUDA"
while IFS=$'\t' read -r name file kernel _; do
    [[ $name == \#* || -z $name ]] && continue
    [[ -n $only && ,$only, != *,$name,* ]] && continue
    "$sarek" compile "$file" --target ptx --kernel "$kernel" -o "$work/$name.ptx" ${SAREK_FLAGS:-}
    regs=$(ptxas -arch=sm_90 -v "$work/$name.ptx" -o "$work/$name.cubin" 2>&1 |
        grep -oP 'Used \K[0-9]+')
    cuobjdump -sass "$work/$name.cubin" | instructions > "$work/$name.s"
    # The hand version of a suite row is named after the row.
    hregs=$(grep -A3 "entry function '_Z[0-9]*${name}P" "$work/hand.log" | grep -oP 'Used \K[0-9]+' || true)
    awk -v f="$name" '/Function :/ { p = ($0 ~ "_Z[0-9]+" f "P") } p' "$work/hand.sass" |
        instructions > "$work/$name.hand.s"
    printf '%-18s | %s | %s\n' "$name" "$(summarise "$work/$name.s" "$regs")" \
        "$(summarise "$work/$name.hand.s" "$hregs")"
done < benches/gpu/suite.tsv
