// Keeps the GPU busy for argv[1] seconds with FP32 FMA kernels (a load step for
// gpuwatt's real-GPU test). Prints start_us/end_us (µs since 1970) around the busy loop.
#include <cstdio>
#include <cstdlib>
#include <sys/time.h>
static long long now_us() { struct timeval tv; gettimeofday(&tv, 0); return tv.tv_sec * 1000000LL + tv.tv_usec; }
__global__ void burn(float *out, int iters) {
  float b = 0.999f, c = 0.5f, x = threadIdx.x * 1e-3f, y = x + 1, z = x + 2, w = x + 3;
  for (int i = 0; i < iters; i++) { x = x * b + c; y = y * b + c; z = z * b + c; w = w * b + c; }
  if (x + y + z + w == 1234.5f) out[0] = x;
}
int main(int argc, char **argv) {
  double secs = argc > 1 ? atof(argv[1]) : 1.0;
  float *d;
  if (cudaMalloc(&d, 4) != cudaSuccess) { fprintf(stderr, "cudaMalloc failed\n"); return 1; }
  burn<<<1, 32>>>(d, 1);
  cudaDeviceSynchronize();
  long long t0 = now_us();
  printf("start_us %lld\n", t0); fflush(stdout);
  int n = 0;
  while (now_us() - t0 < secs * 1e6) { burn<<<132 * 16, 256>>>(d, 20000); cudaDeviceSynchronize(); n++; }
  printf("end_us %lld\n", now_us()); fflush(stdout);
  fprintf(stderr, "%d kernels, err=%s\n", n, cudaGetErrorString(cudaGetLastError()));
  cudaFree(d);
  return 0;
}
