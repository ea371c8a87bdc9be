#!/bin/bash
# On the H200 (after scripts/gpu.sh build, with .gpu carried): the reduce skeleton's first
# pass on 2^28 float32, per items-per-thread and chunks-per-block, plain (tiles.sarek: one
# tile in flight) and software-pipelined (pipelined.sarek: the skeleton's current form).
# Kernel time per launch from `sarek bench`; compare with a 1 GiB device copy (torch: 0.51 ms).
cd "$(dirname "$0")/../../.."
source <(sed -n '/^find_nvrtc()/,/^}/p;/^remote_env()/,/^}/p' scripts/gpu.sh); remote_env
N=268435456
for b in cuda ptx; do
  for items in 8 16 32; do for c in 1 2 4; do
    blocks=$(( (N + 256*items*c - 1) / (256*items*c) ))
    printf '%s tiles items=%s chunks=%s: ' $b $items $c
    .gpu/sarek bench benches/gpu/reduce_tune/tiles.sarek --kernel reduce_i$items --backend $b --size $N --len partial=$blocks --arg n=$N --arg chunks=$c --grid $blocks --block 256 --reps 20 2>&1 | grep -E "^kernel:.*median|rror"
  done; done
  for items in 8 16; do for c in 2 4 8; do
    blocks=$(( (N + 256*items*c - 1) / (256*items*c) ))
    printf '%s pipelined items=%s chunks=%s: ' $b $items $c
    .gpu/sarek bench benches/gpu/reduce_tune/pipelined.sarek --kernel pipe_i$items --backend $b --size $N --len partial=$blocks --arg n=$N --arg chunks=$c --grid $blocks --block 256 --reps 20 2>&1 | grep -E "^kernel:.*median|rror"
  done; done
done
