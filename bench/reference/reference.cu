// Reference kernels in CUDA C for `gpuwatt micro`: the same work as gpuwatt's PTX
// kernels fp32.fma, fp64.fma and dram.copy, built by nvcc, timed with CUDA events, plus
// cudaMemcpy device-to-device. The micro issue asks gpuwatt's kernels to reach >= 99 % of
// these, fp32/fp64 FMA >= 97/98 % of nominal, and DRAM >= 90 % of cudaMemcpy.
//
//   nvcc -O3 -arch=sm_90 -o reference bench/reference/reference.cu && ./reference
//
// Prints one JSON object per line: {"name":..., "per_s":..., "unit":..., "nominal":...}.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(1); } } while (0)

constexpr int CHAINS = 8;
constexpr int UNROLL = 512; // FMAs per loop iteration and thread, as gpuwatt's kernels

template <typename T>
__global__ void fma_kernel(T *out, int iters, T a, T b, unsigned magic) {
    T x[CHAINS];
#pragma unroll
    for (int c = 0; c < CHAINS; c++) x[c] = (T)(threadIdx.x + c) * (T)1e-3 + (T)(clock() & 7);
    for (int i = 0; i < iters; i++) {
#pragma unroll
        for (int u = 0; u < UNROLL / CHAINS; u++) {
#pragma unroll
            for (int c = 0; c < CHAINS; c++) x[c] = fma(x[c], a, b);
        }
    }
    T s = 0;
#pragma unroll
    for (int c = 0; c < CHAINS; c++) s += x[c];
    if ((unsigned)s == magic) out[threadIdx.x] = s; // never true: keeps the chains live
}

__global__ void copy_kernel(const int4 *__restrict__ src, int4 *__restrict__ dst, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) dst[i] = src[i];
}

static float time_ms(cudaEvent_t a, cudaEvent_t b) { float ms; CHECK(cudaEventElapsedTime(&ms, a, b)); return ms; }

int main() {
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    int clockKHz = 0;
    CHECK(cudaDeviceGetAttribute(&clockKHz, cudaDevAttrClockRate, 0));
    double clock = clockKHz * 1e3;
    int sms = p.multiProcessorCount;
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    int threads = 256, blocks = sms * (p.maxThreadsPerMultiProcessor / threads);
    float *outf; double *outd;
    CHECK(cudaMalloc(&outf, threads * sizeof(float)));
    CHECK(cudaMalloc(&outd, threads * sizeof(double)));

    // FP32 FMA: 128 lanes per SM, 2 flops each.
    {
        int iters = 400;
        for (int w = 0; w < 3; w++) fma_kernel<float><<<blocks, threads>>>(outf, iters, 0.999f, 1e-4f, 12345u);
        CHECK(cudaDeviceSynchronize());
        int reps = 20;
        CHECK(cudaEventRecord(e0));
        for (int r = 0; r < reps; r++) fma_kernel<float><<<blocks, threads>>>(outf, iters, 0.999f, 1e-4f, 12345u);
        CHECK(cudaEventRecord(e1));
        CHECK(cudaEventSynchronize(e1));
        double flops = 2.0 * UNROLL * iters * (double)blocks * threads * reps;
        double s = time_ms(e0, e1) / 1e3;
        printf("{\"name\":\"fp32.fma\",\"per_s\":%.6g,\"unit\":\"flop/s\",\"nominal\":%.6g}\n", flops / s, 2.0 * 128 * sms * clock);
    }
    // FP64 FMA: 64 lanes per SM on cc 9.0 and 8.0.
    {
        int iters = 200;
        for (int w = 0; w < 3; w++) fma_kernel<double><<<blocks, threads>>>(outd, iters, 0.999, 1e-4, 12345u);
        CHECK(cudaDeviceSynchronize());
        int reps = 20;
        CHECK(cudaEventRecord(e0));
        for (int r = 0; r < reps; r++) fma_kernel<double><<<blocks, threads>>>(outd, iters, 0.999, 1e-4, 12345u);
        CHECK(cudaEventRecord(e1));
        CHECK(cudaEventSynchronize(e1));
        double flops = 2.0 * UNROLL * iters * (double)blocks * threads * reps;
        double s = time_ms(e0, e1) / 1e3;
        printf("{\"name\":\"fp64.fma\",\"per_s\":%.6g,\"unit\":\"flop/s\",\"nominal\":%.6g}\n", flops / s, 2.0 * 64 * sms * clock);
    }
    // DRAM: a grid-stride 16-byte copy of 1 GiB, and cudaMemcpy device to device; bytes
    // counted read + written.
    {
        size_t bytes = (size_t)1 << 30, n = bytes / sizeof(int4);
        int4 *a, *b;
        CHECK(cudaMalloc(&a, bytes));
        CHECK(cudaMalloc(&b, bytes));
        CHECK(cudaMemset(a, 1, bytes));
        CHECK(cudaMemset(b, 0, bytes));
        int cb = sms * 8;
        for (int w = 0; w < 3; w++) copy_kernel<<<cb, 256>>>(a, b, n);
        CHECK(cudaDeviceSynchronize());
        int reps = 20;
        CHECK(cudaEventRecord(e0));
        for (int r = 0; r < reps; r++) copy_kernel<<<cb, 256>>>(a, b, n);
        CHECK(cudaEventRecord(e1));
        CHECK(cudaEventSynchronize(e1));
        printf("{\"name\":\"dram.copy\",\"per_s\":%.6g,\"unit\":\"B/s\"}\n", 2.0 * bytes * reps / (time_ms(e0, e1) / 1e3));
        for (int w = 0; w < 3; w++) CHECK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
        CHECK(cudaEventRecord(e0));
        for (int r = 0; r < reps; r++) CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice));
        CHECK(cudaEventRecord(e1));
        CHECK(cudaEventSynchronize(e1));
        printf("{\"name\":\"memcpy.d2d\",\"per_s\":%.6g,\"unit\":\"B/s\"}\n", 2.0 * bytes * reps / (time_ms(e0, e1) / 1e3));
        CHECK(cudaFree(a));
        CHECK(cudaFree(b));
    }
    return 0;
}
