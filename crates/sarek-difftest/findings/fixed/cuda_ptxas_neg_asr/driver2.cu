#include <cstdio>
#include <cstdlib>
#include <cmath>
#include VARIANT
static int host_f2i(float x) { if (std::isnan(x)) return 0; if (x >= 2147483648.0f) return 2147483647; if (x <= -2147483648.0f) return (-2147483647 - 1); return (int)x; }
int main() {
  const int n = 256; int ha[n]; float hf[n]; srand(7);
  for (int i = 0; i < n; i++) { ha[i] = (int)((unsigned)rand() * 2654435761u); if (i < 16) ha[i] = i - 8; hf[i] = (rand() % 2001 - 1000) / 37.0f; }
  int want[n];
  for (int i = 0; i < n; i++) { int x = ha[i];
    unsigned s = (unsigned)x * 3u + (unsigned)(x % 7) + (unsigned)(x & 15) + (unsigned)(((int)(0u - (unsigned)x)) >> 1) + 5u + (unsigned)host_f2i(fabsf(hf[i]) * 100.0f) + 2u + (unsigned)n + (unsigned)n;
    want[i] = (int)s; }
  int *a, *o, *cnt, *trap; float *f, *g; double *h; long long *l;
  cudaMalloc(&a, n*4); cudaMalloc(&o, n*4); cudaMalloc(&f, n*4); cudaMalloc(&g, n*4); cudaMalloc(&h, n*8); cudaMalloc(&l, n*8); cudaMalloc(&cnt, n*4); cudaMalloc(&trap, 4);
  cudaMemcpy(a, ha, n*4, cudaMemcpyHostToDevice); cudaMemcpy(f, hf, n*4, cudaMemcpyHostToDevice); cudaMemset(trap, 0, 4); cudaMemset(cnt, 0, n*4); cudaMemset(o, 0, n*4);
  kern<<<1, n>>>(a, n, f, n, o, n, g, n, h, n, l, n, cnt, n, n, trap);
  cudaError_t e = cudaDeviceSynchronize(); if (e) { printf("%s\n", cudaGetErrorString(e)); return 1; }
  int got[n]; cudaMemcpy(got, o, n*4, cudaMemcpyDeviceToHost);
  int bad = 0; for (int i = 0; i < n; i++) bad += got[i] != want[i];
  printf("%d of %d differ\n", bad, n); return 0;
}
