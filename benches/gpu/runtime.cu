// Plain CUDA runtime figures that issue 12's resident-buffer runtime is compared with
// (scripts/gpu.sh runtime): the same work `sarek bench` reports, written directly.
//   1. host time per back-to-back launch of a 1-element saxpy (no sync inside the loop, one at
//      the end), and with a synchronise after each launch;
//   2. upload of 1 GiB of float32 from pageable host memory (what a Rust Vec is), and pinned;
//      download of 1 GiB into pageable memory (touched, and fresh) and pinned; a 1 GiB
//      device-to-device copy;
//   3. saxpy on 2^28 floats: upload x and y once, 100 launches, download y once (wall time of
//      those steps, host data already filled).
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)
using Clock = std::chrono::steady_clock;
static double us(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); }

__global__ void saxpy(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

int main() {
    CHECK(cudaFree(0));
    float *x, *y;
    CHECK(cudaMalloc(&x, 4));
    CHECK(cudaMalloc(&y, 4));
    const int L = 10000;
    for (int i = 0; i < 100; i++) saxpy<<<1, 1>>>(x, y, 2.0f, 1);
    CHECK(cudaDeviceSynchronize());
    auto t0 = Clock::now();
    for (int i = 0; i < L; i++) saxpy<<<1, 1>>>(x, y, 2.0f, 1);
    auto t1 = Clock::now();
    CHECK(cudaDeviceSynchronize());
    auto t2 = Clock::now();
    printf("launch_enqueued_us,%.3f\nlaunch_back_to_back_us,%.3f\n", us(t0, t1) / L, us(t0, t2) / L);
    t0 = Clock::now();
    for (int i = 0; i < L; i++) { saxpy<<<1, 1>>>(x, y, 2.0f, 1); CHECK(cudaStreamSynchronize(0)); }
    t1 = Clock::now();
    printf("launch_with_sync_us,%.3f\n", us(t0, t1) / L);
    cudaFree(x); cudaFree(y);

    const size_t N = size_t(1) << 28;  // 1 GiB of float32
    std::vector<float> hx(N), hy(N);
    for (size_t i = 0; i < N; i++) { hx[i] = float(i % 1000) * 0.001f; hy[i] = 1.0f; }
    CHECK(cudaMalloc(&x, N * 4));
    CHECK(cudaMalloc(&y, N * 4));
    CHECK(cudaMemcpy(x, hx.data(), N * 4, cudaMemcpyHostToDevice));  // warm
    t0 = Clock::now();
    CHECK(cudaMemcpy(x, hx.data(), N * 4, cudaMemcpyHostToDevice));
    t1 = Clock::now();
    printf("upload_1gib_pageable_ms,%.3f\nupload_1gib_pageable_gbps,%.2f\n", us(t0, t1) / 1e3, N * 4 / (us(t0, t1) * 1e3));
    float* pinned;
    CHECK(cudaMallocHost(&pinned, N * 4));
    memcpy(pinned, hx.data(), N * 4);
    t0 = Clock::now();
    CHECK(cudaMemcpy(x, pinned, N * 4, cudaMemcpyHostToDevice));
    t1 = Clock::now();
    printf("upload_1gib_pinned_ms,%.3f\n", us(t0, t1) / 1e3);
    // Downloads of 1 GiB: into pageable memory already touched (what the saxpy figure below
    // does), into fresh pageable memory (what a new Rust Vec is), and into pinned memory.
    CHECK(cudaMemcpy(hx.data(), x, N * 4, cudaMemcpyDeviceToHost));  // warm
    t0 = Clock::now();
    CHECK(cudaMemcpy(hx.data(), x, N * 4, cudaMemcpyDeviceToHost));
    t1 = Clock::now();
    printf("download_1gib_pageable_touched_ms,%.3f\ndownload_1gib_pageable_touched_gbps,%.2f\n", us(t0, t1) / 1e3, N * 4 / (us(t0, t1) * 1e3));
    float* fresh = static_cast<float*>(malloc(N * 4));
    t0 = Clock::now();
    CHECK(cudaMemcpy(fresh, x, N * 4, cudaMemcpyDeviceToHost));
    t1 = Clock::now();
    printf("download_1gib_pageable_fresh_ms,%.3f\ndownload_1gib_pageable_fresh_gbps,%.2f\n", us(t0, t1) / 1e3, N * 4 / (us(t0, t1) * 1e3));
    free(fresh);
    t0 = Clock::now();
    CHECK(cudaMemcpy(pinned, x, N * 4, cudaMemcpyDeviceToHost));
    t1 = Clock::now();
    printf("download_1gib_pinned_ms,%.3f\ndownload_1gib_pinned_gbps,%.2f\n", us(t0, t1) / 1e3, N * 4 / (us(t0, t1) * 1e3));
    // Device-to-device copy of 1 GiB (the figure `DeviceVector::copy_from` is compared with).
    CHECK(cudaMemcpy(y, x, N * 4, cudaMemcpyDeviceToDevice));
    CHECK(cudaDeviceSynchronize());
    t0 = Clock::now();
    CHECK(cudaMemcpy(y, x, N * 4, cudaMemcpyDeviceToDevice));
    CHECK(cudaDeviceSynchronize());
    t1 = Clock::now();
    printf("copy_1gib_device_ms,%.3f\n", us(t0, t1) / 1e3);
    cudaFreeHost(pinned);

    t0 = Clock::now();
    CHECK(cudaMemcpy(x, hx.data(), N * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(y, hy.data(), N * 4, cudaMemcpyHostToDevice));
    auto tu = Clock::now();
    for (int r = 0; r < 100; r++) saxpy<<<N / 256, 256>>>(x, y, 2.0f, int(N));
    CHECK(cudaDeviceSynchronize());
    auto tk = Clock::now();
    CHECK(cudaMemcpy(hy.data(), y, N * 4, cudaMemcpyDeviceToHost));
    t1 = Clock::now();
    printf("saxpy28_upload_ms,%.3f\nsaxpy28_100_launches_ms,%.3f\nsaxpy28_download_ms,%.3f\nsaxpy28_total_ms,%.3f\n",
           us(t0, tu) / 1e3, us(tu, tk) / 1e3, us(tk, t1) / 1e3, us(t0, t1) / 1e3);
    return 0;
}
