#!/bin/sh
# The PoCL barrier defect in plain OpenCL C, without Sarek. host.c runs kernel `k` and the
# barrier-free reference `ref` of a .cl file on the first OpenCL device and counts the
# work-items that differ. PoCL 3.1 (Debian 12): each file differs in its default build
# (loop_constant.cl 52 of 128, helper_loop.cl 11 of 128) and agrees with OPTS=-cl-opt-disable.
set -e
cd "$(dirname "$0")"
cc -O1 -o /tmp/pocl-barrier-host host.c -lOpenCL
for f in loop_constant.cl helper_loop.cl; do
  POCL_KERNEL_CACHE=0 /tmp/pocl-barrier-host "$f" 128 32 || true
  OPTS=-cl-opt-disable POCL_KERNEL_CACHE=0 /tmp/pocl-barrier-host "$f" 128 32 || true
done
