#!/bin/bash
# On a machine with nvcc and an sm_90 GPU: each variant of the checked kernel of
# tests/conformance/q06_intrinsic_aliases.sarek, compared with the host's value of `o`.
cd "$(dirname "$0")"
for v in var_*.cuh; do
  printf '%s: ' "$v"
  nvcc -O3 --fmad=false -arch=sm_90 -DVARIANT="\"$v\"" -o /tmp/sarek_ptxas_repro driver2.cu && /tmp/sarek_ptxas_repro
done
printf 'var_v0_original.cuh, ptxas -O0: '
nvcc -O3 --fmad=false -Xptxas -O0 -arch=sm_90 -DVARIANT='"var_v0_original.cuh"' -o /tmp/sarek_ptxas_repro driver2.cu && /tmp/sarek_ptxas_repro
