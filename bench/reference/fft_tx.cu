// fft_tx.cu: the C++ CUDA reference for `gpuwatt loadlevel`'s 100 % level (issue 6).
//
// N host threads, each with its own stream, pinned host buffers and device buffers, run
// FFT transactions back to back for a fixed time, exactly as gpuwatt's users do:
//   generate the input on the CPU into the pinned buffer, cudaMemcpyAsync host->device,
//   launch a radix-2 shared-memory FFT (one block per transform), cudaMemcpyAsync
//   device->host, cudaStreamSynchronize.
// It prints one JSON line: transactions per second for the size and thread count.
//
// Build: nvcc -O3 -arch=sm_90 -std=c++17 -o fft_tx fft_tx.cu
// Run:   ./fft_tx --size 64 --threads 4 --seconds 5 [--warmup 1]
//
// The first transaction of every thread is checked against a double-precision DFT on
// the CPU (max error / max magnitude <= 1e-4, as gpuwatt's verification); a failure
// exits 1.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(x)                                                                          \
    do {                                                                                  \
        cudaError_t e_ = (x);                                                             \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "fft_tx: %s:%d: %s: %s\n", __FILE__, __LINE__, #x,            \
                    cudaGetErrorString(e_));                                              \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

// Radix-2 decimation in time, out of place, staged in shared memory: load in bit-reversed
// order, log2(n) butterfly stages separated by barriers, store.
__global__ void fft_radix2(const float2 *__restrict__ in, float2 *__restrict__ out,
                           const float2 *__restrict__ tw, int n, int lg) {
    extern __shared__ float2 sh[];
    const int T = blockDim.x;
    for (int i = threadIdx.x; i < n; i += T) sh[__brev(i) >> (32 - lg)] = in[i];
    __syncthreads();
    for (int s = 0; s < lg; s++) {
        const int half = 1 << s;
        for (int j = threadIdx.x; j < n / 2; j += T) {
            const int k = j & (half - 1);
            const int i0 = 2 * j - k, i1 = i0 + half;
            const float2 a = sh[i0], b = sh[i1];
            const float2 w = __ldg(&tw[k << (lg - s - 1)]);
            const float2 t = make_float2(b.x * w.x - b.y * w.y, b.x * w.y + b.y * w.x);
            sh[i0] = make_float2(a.x + t.x, a.y + t.y);
            sh[i1] = make_float2(a.x - t.x, a.y - t.y);
        }
        __syncthreads();
    }
    for (int i = threadIdx.x; i < n; i += T) out[i] = sh[i];
}

struct Result {
    long long tx = 0;
    double maxErr = 0;
};

static double checkDFT(const float2 *x, const float2 *y, int n) {
    double num = 0, den = 0;
    for (int f = 0; f < n; f++) {
        double re = 0, im = 0;
        for (int j = 0; j < n; j++) {
            double a = -2 * M_PI * (double)(((long long)j * f) % n) / n;
            re += x[j].x * cos(a) - x[j].y * sin(a);
            im += x[j].x * sin(a) + x[j].y * cos(a);
        }
        num = fmax(num, hypot(y[f].x - re, y[f].y - im));
        den = fmax(den, hypot(re, im));
    }
    return den > 0 ? num / den : num;
}

int main(int argc, char **argv) {
    int n = 64, threads = 1;
    double seconds = 5, warmup = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string a = argv[i];
        if (a == "--size") n = atoi(argv[i + 1]);
        else if (a == "--threads") threads = atoi(argv[i + 1]);
        else if (a == "--seconds") seconds = atof(argv[i + 1]);
        else if (a == "--warmup") warmup = atof(argv[i + 1]);
        else { fprintf(stderr, "fft_tx: unknown flag %s\n", argv[i]); return 2; }
    }
    if (n < 64 || n > 4096 || (n & (n - 1)) || threads < 1 || threads > 1024 || !(seconds > 0) || warmup < 0) {
        fprintf(stderr, "fft_tx: want --size a power of two in [64, 4096], --threads >= 1, --seconds > 0\n");
        return 2;
    }
    int lg = 0;
    while ((1 << lg) < n) lg++;
    const int block = n / 2 < 1024 ? n / 2 : 1024;
    std::vector<float2> twh(n / 2);
    for (int k = 0; k < n / 2; k++) {
        double a = -2 * M_PI * k / n;
        twh[k] = make_float2((float)cos(a), (float)sin(a));
    }
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    CHECK(cudaFree(0)); // create the primary context before the threads start

    std::atomic<int> ready{0};
    std::atomic<bool> go{false}, measuring{false}, stop{false};
    std::vector<Result> res(threads);
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++) {
        ts.emplace_back([&, t] {
            CHECK(cudaSetDevice(0));
            cudaStream_t s;
            CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
            float2 *hin, *hout, *din, *dout, *dtw;
            const size_t bytes = sizeof(float2) * n;
            CHECK(cudaMallocHost(&hin, bytes));
            CHECK(cudaMallocHost(&hout, bytes));
            CHECK(cudaMalloc(&din, bytes));
            CHECK(cudaMalloc(&dout, bytes));
            CHECK(cudaMalloc(&dtw, sizeof(float2) * n / 2));
            CHECK(cudaMemcpy(dtw, twh.data(), sizeof(float2) * n / 2, cudaMemcpyHostToDevice));
            uint64_t rng = 0x9E3779B97F4A7C15ull * (t + 1);
            auto uni = [&rng]() { // xorshift64*: uniform in [-1, 1)
                rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
                return (float)((double)((rng * 2685821657736338717ull) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
            };
            ready++;
            while (!go.load()) std::this_thread::yield();
            long long count = 0;
            bool first = true;
            while (!stop.load(std::memory_order_relaxed)) {
                for (int i = 0; i < n; i++) hin[i] = make_float2(uni(), uni());
                CHECK(cudaMemcpyAsync(din, hin, bytes, cudaMemcpyHostToDevice, s));
                fft_radix2<<<1, block, bytes, s>>>(din, dout, dtw, n, lg);
                CHECK(cudaGetLastError());
                CHECK(cudaMemcpyAsync(hout, dout, bytes, cudaMemcpyDeviceToHost, s));
                CHECK(cudaStreamSynchronize(s));
                if (first) {
                    res[t].maxErr = checkDFT(hin, hout, n);
                    first = false;
                }
                if (measuring.load(std::memory_order_relaxed)) count++;
            }
            res[t].tx = count;
            CHECK(cudaFreeHost(hin)); CHECK(cudaFreeHost(hout));
            CHECK(cudaFree(din)); CHECK(cudaFree(dout)); CHECK(cudaFree(dtw));
            CHECK(cudaStreamDestroy(s));
        });
    }
    while (ready.load() < threads) std::this_thread::yield();
    go = true;
    std::this_thread::sleep_for(std::chrono::duration<double>(warmup));
    auto t0 = std::chrono::steady_clock::now();
    measuring = true;
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    measuring = false;
    auto t1 = std::chrono::steady_clock::now();
    stop = true;
    for (auto &th : ts) th.join();
    long long total = 0;
    double maxErr = 0;
    for (auto &r : res) { total += r.tx; maxErr = fmax(maxErr, r.maxErr); }
    double dt = std::chrono::duration<double>(t1 - t0).count();
    printf("{\"program\":\"fft_tx\",\"gpu\":\"%s\",\"size\":%d,\"threads\":%d,\"block\":%d,\"seconds\":%.3f,"
           "\"transactions\":%lld,\"tx_per_s\":%.1f,\"max_rel_error\":%.3g,\"verified\":%s}\n",
           prop.name, n, threads, block, dt, total, total / dt, maxErr, maxErr <= 1e-4 ? "true" : "false");
    return maxErr <= 1e-4 ? 0 : 1;
}
