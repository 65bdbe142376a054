/*
 * A fake libcublas for gpuwatt's tests, written from the cuBLAS API documentation (no
 * NVIDIA header is needed or copied). With the fake libcuda (device memory is host memory,
 * a CUdeviceptr is the host address), cublasSgemm_v2 really multiplies (column-major,
 * float accumulation in double, rounded once).
 *
 *   cublasCreate_v2: at most 255 live handles, else CUBLAS_STATUS_ALLOC_FAILED (3).
 *   unknown handle -> CUBLAS_STATUS_NOT_INITIALIZED (1).
 *   cublasSetMathMode: mode other than 0 (default) or 3 (TF32) -> CUBLAS_STATUS_INVALID_VALUE (7).
 *   cublasSgemm_v2: a NULL array -> CUBLAS_STATUS_EXECUTION_FAILED (13); a transpose other
 *                   than N (0) or T (1), negative sizes, or leading dimensions too small -> INVALID_VALUE.
 *   cublasGetVersion_v2: 120804.
 *   fakeCublasLive(): handles outstanding. fakeCublasGemms(): Sgemm calls made.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))
#define MAXH 256

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct { int used, math; void *stream; } hs[MAXH];
static long gemms;

static int valid(intptr_t h) { return h > 0 && h < MAXH && hs[h].used; }

EXPORT int cublasGetVersion_v2(intptr_t h, int *v) { if (!valid(h)) return 1; *v = 120804; return 0; }

EXPORT int cublasCreate_v2(intptr_t *h) {
    pthread_mutex_lock(&mu);
    for (int i = 1; i < MAXH; i++) {
        if (!hs[i].used) {
            hs[i].used = 1; hs[i].math = 0; hs[i].stream = 0; *h = i;
            pthread_mutex_unlock(&mu);
            return 0;
        }
    }
    pthread_mutex_unlock(&mu);
    return 3;
}

EXPORT int cublasDestroy_v2(intptr_t h) {
    pthread_mutex_lock(&mu);
    int ok = valid(h);
    if (ok) hs[h].used = 0;
    pthread_mutex_unlock(&mu);
    return ok ? 0 : 1;
}

EXPORT int cublasSetStream_v2(intptr_t h, void *s) {
    pthread_mutex_lock(&mu);
    int ok = valid(h);
    if (ok) hs[h].stream = s;
    pthread_mutex_unlock(&mu);
    return ok ? 0 : 1;
}

EXPORT int cublasSetMathMode(intptr_t h, int mode) {
    pthread_mutex_lock(&mu);
    int ok = valid(h);
    if (ok && (mode == 0 || mode == 3)) hs[h].math = mode;
    pthread_mutex_unlock(&mu);
    if (!ok) return 1;
    return (mode == 0 || mode == 3) ? 0 : 7;
}

EXPORT int cublasSgemm_v2(intptr_t h, int ta, int tb, int m, int n, int k, const float *alpha,
                          const float *a, int lda, const float *b, int ldb, const float *beta, float *c, int ldc) {
    pthread_mutex_lock(&mu);
    int ok = valid(h);
    if (ok) gemms++;
    pthread_mutex_unlock(&mu);
    if (!ok) return 1;
    if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1) || m < 0 || n < 0 || k < 0) return 7;
    if (lda < (ta ? k : m) || ldb < (tb ? n : k) || ldc < m || lda < 1 || ldb < 1 || ldc < 1) return 7;
    if (a == NULL || b == NULL || c == NULL || alpha == NULL || beta == NULL) return 13;
    for (int j = 0; j < n; j++) {
        for (int i = 0; i < m; i++) {
            double s = 0;
            for (int p = 0; p < k; p++) {
                double x = ta ? a[p + (size_t)i * lda] : a[i + (size_t)p * lda];
                double y = tb ? b[j + (size_t)p * ldb] : b[p + (size_t)j * ldb];
                s += x * y;
            }
            double prev = *beta == 0 ? 0 : (double)*beta * c[i + (size_t)j * ldc];
            c[i + (size_t)j * ldc] = (float)((double)*alpha * s + prev);
        }
    }
    return 0;
}

EXPORT int fakeCublasLive(void) {
    int n = 0;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < MAXH; i++) n += hs[i].used;
    pthread_mutex_unlock(&mu);
    return n;
}

EXPORT long fakeCublasGemms(void) {
    pthread_mutex_lock(&mu);
    long g = gemms;
    pthread_mutex_unlock(&mu);
    return g;
}
