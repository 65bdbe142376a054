/*
 * A fake libcufft for gpuwatt's tests, written from the cuFFT API documentation (no NVIDIA
 * header is needed or copied). With the fake libcuda (device memory is host memory, a
 * CUdeviceptr is the host address), cufftExecC2C really transforms: a direct DFT in
 * double precision, rounded to float.
 *
 *   cufftPlan1d: nx < 1 or nx > 65536 -> CUFFT_INVALID_SIZE (8); nx == 3 -> CUFFT_ALLOC_FAILED (2);
 *                type other than CUFFT_C2C (0x29) -> CUFFT_INVALID_TYPE (3); batch < 1 -> CUFFT_INVALID_VALUE (4).
 *   cufftSetStream, cufftExecC2C, cufftDestroy: unknown plan -> CUFFT_INVALID_PLAN (1).
 *   cufftExecC2C: direction other than -1/1 -> CUFFT_INVALID_VALUE; a NULL array -> CUFFT_EXEC_FAILED (6).
 *   cufftGetVersion: 11203.
 *   fakeCufftLive(): plans outstanding.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define MAXPLANS 256

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct { int used, nx, batch; void *stream; } plans[MAXPLANS];

EXPORT int cufftGetVersion(int *v) { *v = 11203; return 0; }

EXPORT int cufftPlan1d(int *plan, int nx, int type, int batch) {
    if (nx < 1 || nx > 65536) return 8;
    if (nx == 3) return 2;
    if (type != 0x29) return 3;
    if (batch < 1) return 4;
    pthread_mutex_lock(&mu);
    for (int i = 1; i < MAXPLANS; i++) {
        if (!plans[i].used) {
            plans[i].used = 1; plans[i].nx = nx; plans[i].batch = batch; plans[i].stream = 0;
            *plan = i;
            pthread_mutex_unlock(&mu);
            return 0;
        }
    }
    pthread_mutex_unlock(&mu);
    return 2;
}

static int valid(int p) { return p > 0 && p < MAXPLANS && plans[p].used; }

EXPORT int cufftSetStream(int plan, void *stream) {
    pthread_mutex_lock(&mu);
    int ok = valid(plan);
    if (ok) plans[plan].stream = stream;
    pthread_mutex_unlock(&mu);
    return ok ? 0 : 1;
}

EXPORT int cufftDestroy(int plan) {
    pthread_mutex_lock(&mu);
    int ok = valid(plan);
    if (ok) plans[plan].used = 0;
    pthread_mutex_unlock(&mu);
    return ok ? 0 : 1;
}

EXPORT int cufftExecC2C(int plan, float *in, float *out, int dir) {
    pthread_mutex_lock(&mu);
    int ok = valid(plan), n = ok ? plans[plan].nx : 0, b = ok ? plans[plan].batch : 0;
    pthread_mutex_unlock(&mu);
    if (!ok) return 1;
    if (dir != -1 && dir != 1) return 4;
    if (in == NULL || out == NULL) return 6;
    double *tmp = malloc(sizeof(double) * 2 * n);
    if (tmp == NULL) return 6;
    for (int k = 0; k < b; k++) {
        float *x = in + 2 * (size_t)n * k, *y = out + 2 * (size_t)n * k;
        for (int f = 0; f < n; f++) {
            double re = 0, im = 0;
            for (int j = 0; j < n; j++) {
                double a = dir * 2 * M_PI * (double)(((long long)j * f) % n) / n, c = cos(a), s = sin(a);
                re += x[2 * j] * c - x[2 * j + 1] * s;
                im += x[2 * j] * s + x[2 * j + 1] * c;
            }
            tmp[2 * f] = re; tmp[2 * f + 1] = im;
        }
        for (int i = 0; i < 2 * n; i++) y[i] = (float)tmp[i];
    }
    free(tmp);
    return 0;
}

EXPORT int fakeCufftLive(void) {
    int n = 0;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < MAXPLANS; i++) n += plans[i].used;
    pthread_mutex_unlock(&mu);
    return n;
}
