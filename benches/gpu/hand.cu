// Hand-written CUDA versions of the GPU benchmark suite (benches/gpu/suite.tsv): the same
// algorithm, launch shape and sizes as each Sarek kernel, compiled by nvcc -O3 (--fmad=false
// by default, to compare with Sarek's exact default; scripts/gpu-bench.sh also builds a
// --fmad=true copy). Each benchmark fills its inputs on the device, runs WARMUP untimed and REPS
// timed launches (CUDA events around each launch) and prints `name,median_ms,min_ms`.
//
//   hand [NAME...]        run the named benchmarks (default: all)
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#define CHECK(x)                                                                       \
    do {                                                                               \
        cudaError_t e_ = (x);                                                          \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

static const int WARMUP = 3, REPS = 20;

// ---- kernels ------------------------------------------------------------------------------

__global__ void saxpy(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// Four elements per thread, 256 apart, loads before stores (the algorithm of saxpy4.sarek).
__global__ void saxpy4(const float* x, float* y, float a, int n) {
    int base = blockIdx.x * 1024 + threadIdx.x;
    int left = n - base;
    if (768 < left) {
        float x0 = x[base], x1 = x[base + 256], x2 = x[base + 512], x3 = x[base + 768];
        float y0 = y[base], y1 = y[base + 256], y2 = y[base + 512], y3 = y[base + 768];
        y[base] = a * x0 + y0;
        y[base + 256] = a * x1 + y1;
        y[base + 512] = a * x2 + y2;
        y[base + 768] = a * x3 + y3;
    } else {
        for (int k = 0; k < 4; k++)
            if (k * 256 < left) y[base + k * 256] = a * x[base + k * 256] + y[base + k * 256];
    }
}

__global__ void mandelbrot_escape(int* iters, int width, int height, int max_iter) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) {
        float cx = (float)x * 3.0f / (float)width - 2.0f;
        float cy = (float)y * 3.0f / (float)height - 1.5f;
        float zx = 0.0f, zy = 0.0f;
        int k = 0;
        while (k < max_iter && zx * zx + zy * zy <= 4.0f) {
            float t = zx * zx - zy * zy + cx;
            zy = 2.0f * zx * zy + cy;
            zx = t;
            k++;
        }
        iters[y * width + x] = k;
    }
}

// int32 fixed point, 12 fractional bits (tests/kernels/mandelbrot.sarek).
__global__ void mandelbrot_fixed(int* iters, int width, int height, int max_iter, int len) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height && y * width + x < len) {
        const int one = 1 << 12;
        int cx = (x * 3 * one) / width - 2 * one;
        int cy = (y * 3 * one) / height - (3 * one) / 2;
        int zx = 0, zy = 0, k = 0;
        bool escaped = false;
        while (k < max_iter && !escaped) {
            int zx2 = (zx * zx) >> 12;
            int zy2 = (zy * zy) >> 12;
            if (zx2 + zy2 > 4 * one) escaped = true;
            else {
                int nzx = zx2 - zy2 + cx;
                zy = ((2 * zx * zy) >> 12) + cy;
                zx = nzx;
                k++;
            }
        }
        iters[y * width + x] = k;
    }
}

__global__ void matmul_tiled(const float* a, const float* b, float* c, int n) {
    __shared__ float ta[256], tb[256];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    float acc = 0.0f;
    int tiles = (n + 15) / 16;
    for (int t = 0; t < tiles; t++) {
        int ac = t * 16 + tx, br = t * 16 + ty;
        ta[ty * 16 + tx] = (row < n && ac < n) ? a[row * n + ac] : 0.0f;
        tb[ty * 16 + tx] = (br < n && col < n) ? b[br * n + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < 16; k++) acc += ta[ty * 16 + k] * tb[k * 16 + tx];
        __syncthreads();
    }
    if (row < n && col < n) c[row * n + col] = acc;
}

__global__ void matmul_regtile(const float* a, const float* b, float* c, int n) {
    __shared__ float sa[1024], sb[1024];
    int tx = threadIdx.x, ty = threadIdx.y, lin = ty * 16 + tx;
    int row0 = blockIdx.y * 64, col0 = blockIdx.x * 64;
    float acc[16];
#pragma unroll
    for (int k = 0; k < 16; k++) acc[k] = 0.0f;
    for (int t = 0; t < n / 16; t++) {
#pragma unroll
        for (int r = 0; r < 4; r++) {
            int e = lin + r * 256;
            int ar = e / 16, ak = e % 16;
            sa[ak * 64 + ar] = a[(row0 + ar) * n + t * 16 + ak];
            int br = e / 64, bc = e % 64;
            sb[br * 64 + bc] = b[(t * 16 + br) * n + col0 + bc];
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 16; k++) {
            float av[4], bv[4];
            for (int i = 0; i < 4; i++) av[i] = sa[k * 64 + ty * 4 + i];
            for (int j = 0; j < 4; j++) bv[j] = sb[k * 64 + tx * 4 + j];
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) acc[i * 4 + j] += av[i] * bv[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) c[(row0 + ty * 4 + i) * n + col0 + tx * 4 + j] = acc[i * 4 + j];
}

// 128x128 tile per 16x16 block, 8x8 accumulators per thread (rows ty*4+i and 64+ty*4+i,
// columns likewise), 128x8 panels of A (transposed) and 8x128 panels of B in shared memory.
__global__ void matmul_regtile8(const float* a, const float* b, float* c, int n) {
    __shared__ float sa[1024], sb[1024];
    int tx = threadIdx.x, ty = threadIdx.y, lin = ty * 16 + tx;
    int row0 = blockIdx.y * 128, col0 = blockIdx.x * 128;
    float acc[64];
#pragma unroll
    for (int k = 0; k < 64; k++) acc[k] = 0.0f;
    for (int t = 0; t < n / 8; t++) {
#pragma unroll
        for (int r = 0; r < 4; r++) {
            int e = lin + r * 256;
            int ar = e / 8, ak = e % 8;
            sa[ak * 128 + ar] = a[(row0 + ar) * n + t * 8 + ak];
            int br = e / 128, bc = e % 128;
            sb[br * 128 + bc] = b[(t * 8 + br) * n + col0 + bc];
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 8; k++) {
            float av[8], bv[8];
#pragma unroll
            for (int i = 0; i < 8; i++) av[i] = sa[k * 128 + (i / 4) * 64 + ty * 4 + i % 4];
#pragma unroll
            for (int j = 0; j < 8; j++) bv[j] = sb[k * 128 + (j / 4) * 64 + tx * 4 + j % 4];
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++) acc[i * 8 + j] += av[i] * bv[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++)
            c[(row0 + (i / 4) * 64 + ty * 4 + i % 4) * n + col0 + (j / 4) * 64 + tx * 4 + j % 4] = acc[i * 8 + j];
}

__global__ void sum_atomic(const int* input, int* total, int n) {
    __shared__ int partial[256];
    int tid = threadIdx.x;
    int step = gridDim.x * blockDim.x;
    int acc = 0;
    for (int i = blockIdx.x * blockDim.x + tid; i < n; i += step) acc += input[i];
    partial[tid] = acc;
    __syncthreads();
    for (int stride = 128; stride > 0; stride /= 2) {
        if (tid < stride) partial[tid] += partial[tid + stride];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(total, partial[0]);
}

// tests/kernels/reduce_shared.sarek, reduce_sum.
__global__ void reduce_sum(const int* input, int* out, int n) {
    __shared__ int sdata[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    sdata[tid] = i < n ? input[i] : 0;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (tid < stride) sdata[tid] = sdata[tid] + sdata[tid + stride];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

// tests/kernels/transpose.sarek.
__global__ void transpose(const float* input, float* output, int rows, int cols, int len_in, int len_out) {
    __shared__ float tile[272];
    int tx = threadIdx.x, ty = threadIdx.y;
    int bx = blockIdx.x * 16, by = blockIdx.y * 16;
    bool ok = rows * cols <= len_in && rows * cols <= len_out;
    int x = bx + tx, y = by + ty;
    if (ok && x < cols && y < rows) tile[ty * 17 + tx] = input[y * cols + x];
    __syncthreads();
    int ox = by + tx, oy = bx + ty;
    if (ok && ox < rows && oy < cols) output[oy * rows + ox] = tile[tx * 17 + ty];
}

// tests/kernels/scan.sarek, block_scan (Hillis-Steele, 256 per block).
__global__ void block_scan(const int* a, int* out, int n) {
    __shared__ int buf[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    buf[tid] = i < n ? a[i] : 0;
    __syncthreads();
    for (int offset = 1; offset < 256; offset *= 2) {
        int v = tid >= offset ? buf[tid - offset] : 0;
        __syncthreads();
        buf[tid] += v;
        __syncthreads();
    }
    if (i < n) out[i] = buf[tid];
}

// tests/kernels/histogram.sarek, histogram_shared.
__global__ void histogram_shared(const int* data, int* hist, int n) {
    __shared__ int local[64];
    int tid = threadIdx.x;
    if (tid < 64) local[tid] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + tid;
    if (i < n) atomicAdd(&local[data[i] & 63], 1);
    __syncthreads();
    if (tid < 64) atomicAdd(&hist[tid], local[tid]);
}

// tests/kernels/nbody.sarek, nbody_accel (bodies as {px,py,pz,mass}, accelerations as {x,y,z}).
struct Body { float px, py, pz, mass; };
struct Vec3 { float x, y, z; };
__global__ void nbody_accel(const Body* bodies, Vec3* acc, int n, float eps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        Body me = bodies[i];
        float ax = 0.0f, ay = 0.0f, az = 0.0f;
        for (int j = 0; j < n; j++) {
            Body o = bodies[j];
            float dx = o.px - me.px, dy = o.py - me.py, dz = o.pz - me.pz;
            float d2 = dx * dx + dy * dy + dz * dz + eps;
            float inv = 1.0f / (d2 * sqrtf(d2));
            float s = o.mass * inv;
            ax += dx * s; ay += dy * s; az += dz * s;
        }
        acc[i] = Vec3{ax, ay, az};
    }
}

// tests/kernels/stencil.sarek, stencil_2d (5-point Jacobi).
__global__ void stencil_2d(const float* a, float* out, int width, int height, int len_a, int len_out) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height && width * height <= len_a && width * height <= len_out) {
        int i = y * width + x;
        if (x > 0 && x < width - 1 && y > 0 && y < height - 1)
            out[i] = 0.2f * (a[i] + a[i - 1] + a[i + 1] + a[i - width] + a[i + width]);
        else
            out[i] = a[i];
    }
}

// ---- driver -------------------------------------------------------------------------------

__global__ void fill_f32(float* p, size_t n, unsigned seed) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) p[i] = (float)((i * 2654435761u + seed) % 2001) / 1000.0f - 1.0f;
}
__global__ void fill_i32(int* p, size_t n, unsigned seed) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) p[i] = (int)((i * 2654435761u + seed) % 201) - 100;
}
template <class T> T* dev(size_t n) { T* p; CHECK(cudaMalloc(&p, n * sizeof(T))); return p; }
static float* devf(size_t n, unsigned seed) {
    float* p = dev<float>(n);
    fill_f32<<<(n + 255) / 256, 256>>>(p, n, seed);
    return p;
}
static int* devi(size_t n, unsigned seed) {
    int* p = dev<int>(n);
    fill_i32<<<(n + 255) / 256, 256>>>(p, n, seed);
    return p;
}

static void time_it(const char* name, const std::function<void()>& launch) {
    cudaEvent_t s, e;
    CHECK(cudaEventCreate(&s));
    CHECK(cudaEventCreate(&e));
    for (int r = 0; r < WARMUP; r++) launch();
    CHECK(cudaDeviceSynchronize());
    std::vector<float> ms;
    for (int r = 0; r < REPS; r++) {
        CHECK(cudaEventRecord(s));
        launch();
        CHECK(cudaEventRecord(e));
        CHECK(cudaEventSynchronize(e));
        CHECK(cudaGetLastError());
        float t;
        CHECK(cudaEventElapsedTime(&t, s, e));
        ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    float med = REPS % 2 ? ms[REPS / 2] : 0.5f * (ms[REPS / 2 - 1] + ms[REPS / 2]);
    printf("%s,%.4f,%.4f\n", name, med, ms[0]);
    fflush(stdout);
    CHECK(cudaEventDestroy(s));
    CHECK(cudaEventDestroy(e));
}

int main(int argc, char** argv) {
    std::vector<std::string> want(argv + 1, argv + argc);
    auto on = [&](const char* n) { return want.empty() || std::find(want.begin(), want.end(), n) != want.end(); };
    const int N28 = 1 << 28;
    if (on("saxpy")) {
        float *x = devf(N28, 1), *y = devf(N28, 2);
        time_it("saxpy", [&] { saxpy<<<N28 / 256, 256>>>(x, y, 2.0f, N28); });
        cudaFree(x); cudaFree(y);
    }
    if (on("saxpy4")) {
        float *x = devf(N28, 1), *y = devf(N28, 2);
        time_it("saxpy4", [&] { saxpy4<<<N28 / 1024, 256>>>(x, y, 2.0f, N28); });
        cudaFree(x); cudaFree(y);
    }
    if (on("mandelbrot_escape")) {
        int w = 4096; int* it = dev<int>(w * w);
        time_it("mandelbrot_escape", [&] { mandelbrot_escape<<<dim3(w / 16, w / 16), dim3(16, 16)>>>(it, w, w, 256); });
        cudaFree(it);
    }
    if (on("mandelbrot_fixed")) {
        int w = 4096; int* it = dev<int>(w * w);
        time_it("mandelbrot_fixed", [&] { mandelbrot_fixed<<<dim3(w / 16, w / 16), dim3(16, 16)>>>(it, w, w, 256, w * w); });
        cudaFree(it);
    }
    if (on("matmul_tiled")) {
        int n = 4096; float *a = devf(n * n, 1), *b = devf(n * n, 2), *c = dev<float>(n * n);
        time_it("matmul_tiled", [&] { matmul_tiled<<<dim3(n / 16, n / 16), dim3(16, 16)>>>(a, b, c, n); });
        cudaFree(a); cudaFree(b); cudaFree(c);
    }
    if (on("matmul_regtile")) {
        int n = 4096; float *a = devf(n * n, 1), *b = devf(n * n, 2), *c = dev<float>(n * n);
        time_it("matmul_regtile", [&] { matmul_regtile<<<dim3(n / 64, n / 64), dim3(16, 16)>>>(a, b, c, n); });
        cudaFree(a); cudaFree(b); cudaFree(c);
    }
    if (on("matmul_regtile8")) {
        int n = 4096; float *a = devf(n * n, 1), *b = devf(n * n, 2), *c = dev<float>(n * n);
        time_it("matmul_regtile8", [&] { matmul_regtile8<<<dim3(n / 128, n / 128), dim3(16, 16)>>>(a, b, c, n); });
        cudaFree(a); cudaFree(b); cudaFree(c);
    }
    if (on("sum_atomic")) {
        int* in = devi(N28, 3); int* tot = dev<int>(1);
        // Grid: 4 waves of 132 SMs x 8 blocks of 256 threads (the Sarek side uses the same grid).
        time_it("sum_atomic", [&] { sum_atomic<<<4224, 256>>>(in, tot, N28); });
        cudaFree(in); cudaFree(tot);
    }
    if (on("reduce_sum")) {
        int* in = devi(N28, 3); int* out = dev<int>(N28 / 256);
        time_it("reduce_sum", [&] { reduce_sum<<<N28 / 256, 256>>>(in, out, N28); });
        cudaFree(in); cudaFree(out);
    }
    if (on("transpose")) {
        int r = 8192; float *in = devf((size_t)r * r, 1), *out = dev<float>((size_t)r * r);
        time_it("transpose", [&] { transpose<<<dim3(r / 16, r / 16), dim3(16, 16)>>>(in, out, r, r, r * r, r * r); });
        cudaFree(in); cudaFree(out);
    }
    if (on("block_scan")) {
        int *in = devi(N28, 4), *out = dev<int>(N28);
        time_it("block_scan", [&] { block_scan<<<N28 / 256, 256>>>(in, out, N28); });
        cudaFree(in); cudaFree(out);
    }
    if (on("histogram_shared")) {
        int *in = devi(N28, 5), *h = dev<int>(64);
        time_it("histogram_shared", [&] { histogram_shared<<<N28 / 256, 256>>>(in, h, N28); });
        cudaFree(in); cudaFree(h);
    }
    if (on("nbody_accel")) {
        int n = 65536;
        Body* b = (Body*)devf((size_t)n * 4, 6);
        Vec3* acc = dev<Vec3>(n);
        time_it("nbody_accel", [&] { nbody_accel<<<n / 256, 256>>>(b, acc, n, 0.01f); });
        cudaFree(b); cudaFree(acc);
    }
    if (on("stencil_2d")) {
        int w = 8192; float *a = devf((size_t)w * w, 7), *o = dev<float>((size_t)w * w);
        time_it("stencil_2d", [&] { stencil_2d<<<dim3(w / 16, w / 16), dim3(16, 16)>>>(a, o, w, w, w * w, w * w); });
        cudaFree(a); cudaFree(o);
    }
    return 0;
}
