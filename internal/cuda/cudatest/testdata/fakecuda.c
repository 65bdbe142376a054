/*
 * A fake libcuda for gpuwatt's tests: every driver function the cuda binding uses, with
 * plausible semantics, written from the CUDA driver API documentation (no NVIDIA header is
 * needed or copied).
 *
 * Build: gcc -shared -fPIC -pthread -o libcuda.so.1 fakecuda.c [-DFAKE_OLD_DRIVER] ...
 *
 * Two GPUs:
 *   0  "Fake H100 80GB HBM3": 132 SMs at 1980 MHz, compute capability 9.0.
 *   1  "Fake Tesla V100-SXM2-16GB": 80 SMs at 1530 MHz, compute capability 7.0.
 * Device memory is real host memory from malloc, so copies round-trip; a CUdeviceptr is the
 * host address. Every call that needs a context checks the calling thread's current
 * context (thread-local, as in the real driver) and returns CUDA_ERROR_INVALID_CONTEXT
 * without one, so a binding that strays off its context thread fails.
 *
 * Modules: cuModuleLoadDataEx accepts NUL-terminated PTX text holding ".entry"; each entry's
 * parameter list is parsed (.u32/.s32/.f32/.b32 are 4 bytes, 64-bit types 8), so launches
 * copy exactly the bytes the real driver would. Text holding "SYNTAX_ERROR" fails with
 * CUDA_ERROR_INVALID_PTX and a ptxas-like error log. A launch records its shape and the
 * bytes of each parameter (fakeLastLaunch); the kernel "fill_u32(.u64 buf, .u32 value,
 * .u32 n)" really writes value into buf[0..n), checking the buffer's bounds (700 otherwise).
 * Streams do nothing; events return the elapsed time set by fakeSetElapsedMS (default 1.5),
 * or, after fakeSetPerLaunchMS(ms > 0), ms per launch made between their records.
 * fakeSetHang(1): the next launch never finishes (a kernel that hangs): from then on every
 * event recorded is not ready (cuEventQuery, cuStreamQuery: CUDA_ERROR_NOT_READY), and
 * cuEventSynchronize on such an event, cuStreamSynchronize, cuCtxSynchronize, cuMemFree,
 * cuModuleUnload and the primary context's release block, as a real driver's do behind a
 * kernel that does not end; fakeSetHang(0) lets them all finish.
 *
 * Defines:
 *   FAKE_OLD_DRIVER  no cuGetErrorName/String, cuDeviceGetUuid_v2 (cuDeviceGetUuid only),
 *                    cuEventElapsedTime_v2 (v1 only), cuFuncSetAttribute, cuMemGetInfo_v2.
 *   FAKE_NO_DEVICE   cuInit fails with CUDA_ERROR_NO_DEVICE (a driver but no GPU).
 *   FAKE_STUB        cuInit fails with CUDA_ERROR_STUB_LIBRARY (the toolkit's stub).
 *   FAKE_NOT_CUDA    no cuInit at all (not a libcuda).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_STUB_LIBRARY = 34,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_INVALID_PTX = 218,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_UNKNOWN = 999,
};

/* ---- global state, under one mutex ---- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void unlockp(int *x) { (void)x; pthread_mutex_unlock(&mu); }
#define LOCK() pthread_mutex_lock(&mu); int lk_ __attribute__((cleanup(unlockp))) = 0; (void)lk_

static int initDone;
static int initCalls;
static int wrongThread; /* calls refused for want of a current context */

typedef struct {
    const char *name;
    unsigned char uuid[16];
    unsigned long long totalMem;
    const char *busId;
    int sms, clockKHz, memClockKHz, busWidth, l2, threadsPerSM, ccMajor, ccMinor;
    int sharedPerSM, threadsPerBlock, sharedOptin, warp, sharedPerBlock;
} device;

static const device devs[2] = {
    {"Fake H100 80GB HBM3",
     {0x5a, 0x3c, 0x1e, 0x2f, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc},
     85520809984ULL, "0000:19:00.0",
     132, 1980000, 2619000, 5120, 52428800, 2048, 9, 0, 233472, 1024, 232448, 32, 49152},
    {"Fake Tesla V100-SXM2-16GB",
     {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10},
     16945512448ULL, "0000:3B:00.0",
     80, 1530000, 877000, 4096, 6291456, 2048, 7, 0, 98304, 1024, 98304, 32, 49152},
};

typedef struct ctx {
    int dev;
    int refs;
} ctx;
static ctx ctxs[2] = {{0, 0}, {1, 0}};
static __thread ctx *current;

#define NEED_INIT() do { if (!initDone) return CUDA_ERROR_NOT_INITIALIZED; } while (0)
#define NEED_CTX() do { NEED_INIT(); if (current == NULL || current->refs == 0) { wrongThread++; return CUDA_ERROR_INVALID_CONTEXT; } } while (0)

/* A simple list of live objects of each kind. */
typedef struct obj {
    struct obj *next;
    int kind;
    unsigned long long addr; /* allocations: the address */
    unsigned long long size;
    unsigned flags;
    int recorded;
    int pending; /* events: recorded behind a kernel that hangs */
    int launchesAt; /* events: launches made before the last record */
    int dev;
    void *extra;
} obj;
enum { K_ALLOC, K_HOST, K_MODULE, K_STREAM, K_EVENT, K_NKINDS };
static obj *live;
static int counts[K_NKINDS];

static obj *add(int kind) {
    obj *o = calloc(1, sizeof *o);
    if (o == NULL) return NULL;
    o->kind = kind;
    o->next = live;
    live = o;
    counts[kind]++;
    return o;
}

static obj *find(int kind, const void *h) {
    for (obj *o = live; o != NULL; o = o->next)
        if (o->kind == kind && o == h) return o;
    return NULL;
}

static obj *findAddr(int kind, unsigned long long a) {
    for (obj *o = live; o != NULL; o = o->next)
        if (o->kind == kind && o->addr == a) return o;
    return NULL;
}

static void drop(obj *x) {
    for (obj **p = &live; *p != NULL; p = &(*p)->next) {
        if (*p == x) {
            *p = x->next;
            counts[x->kind]--;
            free(x);
            return;
        }
    }
}

/* within reports whether [a, a+n) lies inside one live device allocation. */
static int within(unsigned long long a, unsigned long long n) {
    for (obj *o = live; o != NULL; o = o->next)
        if (o->kind == K_ALLOC && a >= o->addr && a + n <= o->addr + o->size) return 1;
    return 0;
}

/* ---- modules ---- */

#define MAXPARAMS 32
typedef struct {
    char name[64];
    int nparams;
    int psize[MAXPARAMS];
    int maxDynShared;
} function;

typedef struct {
    int nfuncs;
    function funcs[16];
} module;

static function *findFunc(const void *h, obj **mod) {
    for (obj *o = live; o != NULL; o = o->next) {
        if (o->kind != K_MODULE) continue;
        module *m = o->extra;
        for (int i = 0; i < m->nfuncs; i++)
            if ((const void *)&m->funcs[i] == h) {
                if (mod) *mod = o;
                return &m->funcs[i];
            }
    }
    return NULL;
}

static int isIdent(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$';
}

/* parse fills m from the entries of the PTX text. */
static void parse(const char *ptx, module *m) {
    const char *p = ptx;
    while (m->nfuncs < 16 && (p = strstr(p, ".entry")) != NULL) {
        p += 6;
        function *f = &m->funcs[m->nfuncs];
        memset(f, 0, sizeof *f);
        f->maxDynShared = 49152;
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
        int n = 0;
        while (isIdent(*p) && n < 63) f->name[n++] = *p++;
        f->name[n] = 0;
        const char *open = strchr(p, '(');
        const char *body = strchr(p, '{');
        if (open != NULL && (body == NULL || open < body)) {
            const char *close = strchr(open, ')');
            const char *q = open;
            while (close != NULL && (q = strstr(q, ".param")) != NULL && q < close && f->nparams < MAXPARAMS) {
                q += 6;
                while (*q == ' ' || *q == '\t' || *q == '\n') q++;
                int size = 8;
                if (strncmp(q + 2, "32", 2) == 0) size = 4;
                else if (strncmp(q + 2, "16", 2) == 0) size = 2;
                else if (q[2] == '8') size = 1;
                f->psize[f->nparams++] = size;
            }
        }
        m->nfuncs++;
    }
}

/* ---- launch record ---- */

typedef struct {
    char name[64];
    unsigned grid[3], block[3];
    unsigned shared;
    unsigned nparams;
    unsigned long long stream;
    unsigned psize[MAXPARAMS];
    unsigned long long param[MAXPARAMS];
} launchRecord;

static launchRecord lastLaunch;
static int launches;
static float elapsedMS = 1.5f;
static float perLaunchMS; /* > 0: elapsed times are this per launch between the events */
static int lastOptLevel = -1, lastNOpts, lastVerbose;
static unsigned lastStreamFlags, lastEventFlags, lastHostFlags;

/* ---- control functions for the tests ---- */

EXPORT int fakeCount(int what) {
    LOCK();
    switch (what) {
    case 0: return counts[K_ALLOC];
    case 1: return counts[K_HOST];
    case 2: return counts[K_MODULE];
    case 3: return counts[K_STREAM];
    case 4: return counts[K_EVENT];
    case 5: return ctxs[0].refs + ctxs[1].refs;
    case 6: return launches;
    case 7: return initCalls;
    case 8: return wrongThread;
    }
    return -1;
}

EXPORT void fakeSetElapsedMS(float ms) { LOCK(); elapsedMS = ms; }
EXPORT void fakeSetPerLaunchMS(float ms) { LOCK(); perLaunchMS = ms; }

/* fakeSetHang(1) arms a hang: the next launch never finishes; fakeSetHang(0) ends it. */
static int hangArmed, wedged;
EXPORT void fakeSetHang(int on) {
    LOCK();
    hangArmed = on;
    if (!on) wedged = 0;
}

/* waitWedged blocks while a launched kernel hangs (the mutex released meanwhile). */
static void waitWedged(void) {
    for (;;) {
        pthread_mutex_lock(&mu);
        int w = wedged;
        pthread_mutex_unlock(&mu);
        if (!w) return;
        usleep(1000);
    }
}

EXPORT int fakeLastLaunch(launchRecord *out) {
    LOCK();
    if (launches == 0) return 0;
    *out = lastLaunch;
    return 1;
}

EXPORT void fakeLastJIT(int *optLevel, int *nopts, int *verbose) {
    LOCK();
    *optLevel = lastOptLevel;
    *nopts = lastNOpts;
    *verbose = lastVerbose;
}

EXPORT unsigned fakeLastFlags(int what) {
    LOCK();
    switch (what) {
    case 0: return lastStreamFlags;
    case 1: return lastEventFlags;
    case 2: return lastHostFlags;
    }
    return 0;
}

/* ---- the driver API ---- */

#ifndef FAKE_NOT_CUDA
EXPORT CUresult cuInit(unsigned flags) {
    LOCK();
    initCalls++;
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
#if defined(FAKE_NO_DEVICE)
    return CUDA_ERROR_NO_DEVICE;
#elif defined(FAKE_STUB)
    return CUDA_ERROR_STUB_LIBRARY;
#else
    initDone = 1;
    return CUDA_SUCCESS;
#endif
}
#endif

EXPORT CUresult cuDriverGetVersion(int *v) {
    if (v == NULL) return CUDA_ERROR_INVALID_VALUE;
    *v = 13000;
    return CUDA_SUCCESS;
}

#ifndef FAKE_OLD_DRIVER
static const char *errName(CUresult r) {
    switch (r) {
    case CUDA_SUCCESS: return "CUDA_SUCCESS";
    case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
    case CUDA_ERROR_INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
    case CUDA_ERROR_INVALID_PTX: return "CUDA_ERROR_INVALID_PTX";
    case CUDA_ERROR_INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
    case CUDA_ERROR_NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
    case CUDA_ERROR_NOT_SUPPORTED: return "CUDA_ERROR_NOT_SUPPORTED";
    }
    return NULL;
}

static const char *errString(CUresult r) {
    switch (r) {
    case CUDA_SUCCESS: return "no error";
    case CUDA_ERROR_INVALID_VALUE: return "invalid argument";
    case CUDA_ERROR_OUT_OF_MEMORY: return "out of memory";
    case CUDA_ERROR_INVALID_CONTEXT: return "invalid device context";
    case CUDA_ERROR_INVALID_PTX: return "a PTX JIT compilation failed";
    case CUDA_ERROR_INVALID_HANDLE: return "invalid resource handle";
    case CUDA_ERROR_NOT_FOUND: return "named symbol not found";
    case CUDA_ERROR_NOT_SUPPORTED: return "operation not supported";
    }
    return NULL;
}

EXPORT CUresult cuGetErrorName(CUresult r, const char **s) {
    if (s == NULL) return CUDA_ERROR_INVALID_VALUE;
    *s = errName(r);
    return *s == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorString(CUresult r, const char **s) {
    if (s == NULL) return CUDA_ERROR_INVALID_VALUE;
    *s = errString(r);
    return *s == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
#endif

EXPORT CUresult cuDeviceGetCount(int *n) {
    LOCK();
    NEED_INIT();
    if (n == NULL) return CUDA_ERROR_INVALID_VALUE;
    *n = 2;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    LOCK();
    NEED_INIT();
    if (d == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= 2) return CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return CUDA_SUCCESS;
}

#define NEED_DEV(d) do { NEED_INIT(); if ((d) < 0 || (d) >= 2) return CUDA_ERROR_INVALID_DEVICE; } while (0)

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
    LOCK();
    NEED_DEV(d);
    if (name == NULL || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "%s", devs[d].name);
    return CUDA_SUCCESS;
}

static CUresult uuid(unsigned char *u, CUdevice d) {
    LOCK();
    NEED_DEV(d);
    if (u == NULL) return CUDA_ERROR_INVALID_VALUE;
    memcpy(u, devs[d].uuid, 16);
    return CUDA_SUCCESS;
}

#ifndef FAKE_OLD_DRIVER
EXPORT CUresult cuDeviceGetUuid_v2(unsigned char *u, CUdevice d) { return uuid(u, d); }
#endif
EXPORT CUresult cuDeviceGetUuid(unsigned char *u, CUdevice d) { return uuid(u, d); }

EXPORT CUresult cuDeviceTotalMem_v2(size_t *b, CUdevice d) {
    LOCK();
    NEED_DEV(d);
    if (b == NULL) return CUDA_ERROR_INVALID_VALUE;
    *b = devs[d].totalMem;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
    LOCK();
    NEED_DEV(d);
    if (v == NULL || attr <= 0 || attr >= 200) return CUDA_ERROR_INVALID_VALUE;
    const device *x = &devs[d];
    switch (attr) {
    case 1: *v = x->threadsPerBlock; break;
    case 8: *v = x->sharedPerBlock; break;
    case 10: *v = x->warp; break;
    case 13: *v = x->clockKHz; break;
    case 16: *v = x->sms; break;
    case 36: *v = x->memClockKHz; break;
    case 37: *v = x->busWidth; break;
    case 38: *v = x->l2; break;
    case 39: *v = x->threadsPerSM; break;
    case 75: *v = x->ccMajor; break;
    case 76: *v = x->ccMinor; break;
    case 81: *v = x->sharedPerSM; break;
    case 97: *v = x->sharedOptin; break;
    default: *v = 0;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetPCIBusId(char *buf, int len, CUdevice d) {
    LOCK();
    NEED_DEV(d);
    if (buf == NULL || len < 13) return CUDA_ERROR_INVALID_VALUE;
    snprintf(buf, (size_t)len, "%s", devs[d].busId);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(ctx **pctx, CUdevice d) {
    LOCK();
    NEED_DEV(d);
    if (pctx == NULL) return CUDA_ERROR_INVALID_VALUE;
    ctxs[d].refs++;
    *pctx = &ctxs[d];
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
    waitWedged();
    LOCK();
    NEED_DEV(d);
    if (ctxs[d].refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
    ctxs[d].refs--;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(ctx *c) {
    LOCK();
    NEED_INIT();
    if (c == NULL) {
        current = NULL;
        return CUDA_SUCCESS;
    }
    if ((c != &ctxs[0] && c != &ctxs[1]) || c->refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
    current = c;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize(void) {
    waitWedged();
    LOCK();
    NEED_CTX();
    return CUDA_SUCCESS;
}

#ifndef FAKE_OLD_DRIVER
EXPORT CUresult cuMemGetInfo_v2(size_t *freeb, size_t *total) {
    LOCK();
    NEED_CTX();
    if (freeb == NULL || total == NULL) return CUDA_ERROR_INVALID_VALUE;
    unsigned long long used = 0;
    for (obj *o = live; o != NULL; o = o->next)
        if (o->kind == K_ALLOC && o->dev == current->dev) used += o->size;
    *total = devs[current->dev].totalMem;
    *freeb = *total - used;
    return CUDA_SUCCESS;
}
#endif

/* ---- memory ---- */

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
    LOCK();
    NEED_CTX();
    if (p == NULL || n == 0) return CUDA_ERROR_INVALID_VALUE;
    if (n > (1ULL << 32)) return CUDA_ERROR_OUT_OF_MEMORY;
    void *m = malloc(n);
    if (m == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    obj *o = add(K_ALLOC);
    if (o == NULL) {
        free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    o->addr = (CUdeviceptr)m;
    o->size = n;
    o->dev = current->dev;
    *p = o->addr;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
    waitWedged();
    LOCK();
    NEED_CTX();
    obj *o = findAddr(K_ALLOC, p);
    if (o == NULL) return CUDA_ERROR_INVALID_VALUE;
    free((void *)o->addr);
    drop(o);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char v, size_t n) {
    LOCK();
    NEED_CTX();
    if (!within(p, n)) return CUDA_ERROR_INVALID_VALUE;
    memset((void *)p, v, n);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemsetD32_v2(CUdeviceptr p, unsigned v, size_t n) {
    LOCK();
    NEED_CTX();
    if (p % 4 != 0 || !within(p, 4 * (unsigned long long)n)) return CUDA_ERROR_INVALID_VALUE;
    unsigned *w = (unsigned *)p;
    for (size_t i = 0; i < n; i++) w[i] = v;
    return CUDA_SUCCESS;
}

static CUresult htod(CUdeviceptr dst, const void *src, size_t n) {
    NEED_CTX();
    if (src == NULL || !within(dst, n)) return CUDA_ERROR_INVALID_VALUE;
    memcpy((void *)dst, src, n);
    return CUDA_SUCCESS;
}

static CUresult dtoh(void *dst, CUdeviceptr src, size_t n) {
    NEED_CTX();
    if (dst == NULL || !within(src, n)) return CUDA_ERROR_INVALID_VALUE;
    memcpy(dst, (const void *)src, n);
    return CUDA_SUCCESS;
}

static CUresult dtod(CUdeviceptr dst, CUdeviceptr src, size_t n) {
    NEED_CTX();
    if (!within(dst, n) || !within(src, n)) return CUDA_ERROR_INVALID_VALUE;
    memmove((void *)dst, (const void *)src, n);
    return CUDA_SUCCESS;
}

static int streamOK(void *s) { return s == NULL || find(K_STREAM, s) != NULL; }

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) { LOCK(); return htod(dst, src, n); }
EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) { LOCK(); return dtoh(dst, src, n); }
EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) { LOCK(); return dtod(dst, src, n); }

/* The asynchronous copies need page-locked host memory, as the real ones do to be async. */
static int pinnedRange(const void *p, size_t n) {
    unsigned long long a = (unsigned long long)p;
    for (obj *o = live; o != NULL; o = o->next)
        if (o->kind == K_HOST && a >= o->addr && a + n <= o->addr + o->size) return 1;
    return 0;
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *s) {
    LOCK();
    if (!streamOK(s)) return CUDA_ERROR_INVALID_HANDLE;
    if (!pinnedRange(src, n)) return CUDA_ERROR_INVALID_VALUE;
    return htod(dst, src, n);
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *s) {
    LOCK();
    if (!streamOK(s)) return CUDA_ERROR_INVALID_HANDLE;
    if (!pinnedRange(dst, n)) return CUDA_ERROR_INVALID_VALUE;
    return dtoh(dst, src, n);
}

EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, void *s) {
    LOCK();
    if (!streamOK(s)) return CUDA_ERROR_INVALID_HANDLE;
    return dtod(dst, src, n);
}

EXPORT CUresult cuMemHostAlloc(void **pp, size_t n, unsigned flags) {
    LOCK();
    NEED_CTX();
    if (pp == NULL || n == 0 || flags > 7) return CUDA_ERROR_INVALID_VALUE;
    void *m = calloc(1, n);
    if (m == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    obj *o = add(K_HOST);
    o->addr = (unsigned long long)m;
    o->size = n;
    o->flags = flags;
    lastHostFlags = flags;
    *pp = m;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFreeHost(void *p) {
    LOCK();
    NEED_CTX();
    obj *o = findAddr(K_HOST, (unsigned long long)p);
    if (o == NULL) return CUDA_ERROR_INVALID_VALUE;
    free(p);
    drop(o);
    return CUDA_SUCCESS;
}

/* ---- modules ---- */

enum { JIT_INFO_LOG = 3, JIT_INFO_SIZE = 4, JIT_ERROR_LOG = 5, JIT_ERROR_SIZE = 6, JIT_OPT_LEVEL = 7, JIT_VERBOSE = 12 };

EXPORT CUresult cuModuleLoadDataEx(void **mod, const void *image, unsigned n, const int *opts, void **vals) {
    LOCK();
    NEED_CTX();
    if (mod == NULL || image == NULL || (n > 0 && (opts == NULL || vals == NULL))) return CUDA_ERROR_INVALID_VALUE;
    char *errLog = NULL, *infoLog = NULL;
    size_t errSize = 0, infoSize = 0;
    int errSizeAt = -1, infoSizeAt = -1;
    lastOptLevel = -1;
    lastVerbose = 0;
    lastNOpts = (int)n;
    for (unsigned i = 0; i < n; i++) {
        switch (opts[i]) {
        case JIT_INFO_LOG: infoLog = vals[i]; break;
        case JIT_INFO_SIZE: infoSize = (size_t)vals[i]; infoSizeAt = (int)i; break;
        case JIT_ERROR_LOG: errLog = vals[i]; break;
        case JIT_ERROR_SIZE: errSize = (size_t)vals[i]; errSizeAt = (int)i; break;
        case JIT_OPT_LEVEL:
            if ((size_t)vals[i] > 4) return CUDA_ERROR_INVALID_VALUE;
            lastOptLevel = (int)(size_t)vals[i];
            break;
        case JIT_VERBOSE: lastVerbose = (int)(size_t)vals[i]; break;
        default: return CUDA_ERROR_INVALID_VALUE;
        }
    }
    const char *ptx = image;
    const char *bad = strstr(ptx, "SYNTAX_ERROR");
    if (bad != NULL) {
        int line = 1;
        for (const char *p = ptx; p < bad; p++) line += *p == '\n';
        if (errLog != NULL && errSize > 0) {
            int w = snprintf(errLog, errSize,
                             "ptxas application ptx input, line %d; error   : syntax error at 'SYNTAX_ERROR'\n"
                             "ptxas fatal   : Ptx assembly aborted due to errors", line);
            if (errSizeAt >= 0) vals[errSizeAt] = (void *)(size_t)(w < (int)errSize ? w + 1 : (int)errSize);
        }
        return CUDA_ERROR_INVALID_PTX;
    }
    if (strstr(ptx, ".entry") == NULL) {
        if (errLog != NULL && errSize > 0) snprintf(errLog, errSize, "fake: no .entry in the image");
        return CUDA_ERROR_INVALID_IMAGE;
    }
    module *m = calloc(1, sizeof *m);
    if (m == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    parse(ptx, m);
    obj *o = add(K_MODULE);
    o->extra = m;
    if (infoLog != NULL && infoSize > 0) {
        int w;
        if (lastVerbose)
            w = snprintf(infoLog, infoSize, "ptxas info    : Compiling entry function '%s' for 'sm_90'\n"
                         "ptxas info    : Used 32 registers", m->funcs[0].name);
        else
            w = snprintf(infoLog, infoSize, "fake ptxas: %d entries", m->nfuncs);
        if (infoSizeAt >= 0) vals[infoSizeAt] = (void *)(size_t)(w + 1);
    }
    if (errSizeAt >= 0) vals[errSizeAt] = 0;
    *mod = o;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleUnload(void *mod) {
    waitWedged();
    LOCK();
    NEED_CTX();
    obj *o = find(K_MODULE, mod);
    if (o == NULL) return CUDA_ERROR_INVALID_HANDLE;
    free(o->extra);
    drop(o);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(function **f, void *mod, const char *name) {
    LOCK();
    NEED_CTX();
    obj *o = find(K_MODULE, mod);
    if (o == NULL) return CUDA_ERROR_INVALID_HANDLE;
    if (f == NULL || name == NULL) return CUDA_ERROR_INVALID_VALUE;
    module *m = o->extra;
    for (int i = 0; i < m->nfuncs; i++) {
        if (strcmp(m->funcs[i].name, name) == 0) {
            *f = &m->funcs[i];
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuFuncGetAttribute(int *v, int attr, function *f) {
    LOCK();
    NEED_CTX();
    if (findFunc(f, NULL) == NULL) return CUDA_ERROR_INVALID_HANDLE;
    if (v == NULL) return CUDA_ERROR_INVALID_VALUE;
    switch (attr) {
    case 0: *v = 1024; break;               /* MAX_THREADS_PER_BLOCK */
    case 1: *v = 0; break;                  /* SHARED_SIZE_BYTES */
    case 2: *v = 0; break;                  /* CONST_SIZE_BYTES */
    case 3: *v = 0; break;                  /* LOCAL_SIZE_BYTES */
    case 4: *v = 32; break;                 /* NUM_REGS */
    case 5: *v = 80; break;                 /* PTX_VERSION */
    case 6: *v = 10 * devs[current->dev].ccMajor + devs[current->dev].ccMinor; break;
    case 8: *v = f->maxDynShared; break;    /* MAX_DYNAMIC_SHARED_SIZE_BYTES */
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

#ifndef FAKE_OLD_DRIVER
EXPORT CUresult cuFuncSetAttribute(function *f, int attr, int v) {
    LOCK();
    NEED_CTX();
    if (findFunc(f, NULL) == NULL) return CUDA_ERROR_INVALID_HANDLE;
    if (attr != 8) return CUDA_ERROR_NOT_SUPPORTED;
    if (v < 0 || v > devs[current->dev].sharedOptin) return CUDA_ERROR_INVALID_VALUE;
    f->maxDynShared = v;
    return CUDA_SUCCESS;
}
#endif

EXPORT CUresult cuLaunchKernel(function *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
    LOCK();
    NEED_CTX();
    if (findFunc(f, NULL) == NULL) return CUDA_ERROR_INVALID_HANDLE;
    if (!streamOK(stream)) return CUDA_ERROR_INVALID_HANDLE;
    if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0) return CUDA_ERROR_INVALID_VALUE;
    if ((unsigned long long)bx * by * bz > 1024) return CUDA_ERROR_INVALID_VALUE;
    if ((int)shared > f->maxDynShared) return CUDA_ERROR_INVALID_VALUE;
    if (extra != NULL) return CUDA_ERROR_INVALID_VALUE;
    if (f->nparams > 0 && params == NULL) return CUDA_ERROR_INVALID_VALUE;
    launchRecord r;
    memset(&r, 0, sizeof r);
    snprintf(r.name, sizeof r.name, "%s", f->name);
    r.grid[0] = gx, r.grid[1] = gy, r.grid[2] = gz;
    r.block[0] = bx, r.block[1] = by, r.block[2] = bz;
    r.shared = shared;
    r.stream = (unsigned long long)stream;
    r.nparams = (unsigned)f->nparams;
    for (int i = 0; i < f->nparams; i++) {
        if (params[i] == NULL) return CUDA_ERROR_INVALID_VALUE;
        r.psize[i] = (unsigned)f->psize[i];
        memcpy(&r.param[i], params[i], (size_t)f->psize[i]);
    }
    if (strcmp(f->name, "fill_u32") == 0 && f->nparams == 3) {
        unsigned long long buf = r.param[0];
        unsigned value = (unsigned)r.param[1], count = (unsigned)r.param[2];
        if (!within(buf, 4ULL * count)) return CUDA_ERROR_ILLEGAL_ADDRESS;
        for (unsigned i = 0; i < count; i++) ((unsigned *)buf)[i] = value;
    }
    lastLaunch = r;
    launches++;
    if (hangArmed) wedged = 1;
    return CUDA_SUCCESS;
}

/* ---- streams and events ---- */

EXPORT CUresult cuStreamCreate(void **s, unsigned flags) {
    LOCK();
    NEED_CTX();
    if (s == NULL || flags > 1) return CUDA_ERROR_INVALID_VALUE;
    obj *o = add(K_STREAM);
    o->flags = flags;
    lastStreamFlags = flags;
    *s = o;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamSynchronize(void *s) {
    waitWedged();
    LOCK();
    NEED_CTX();
    return streamOK(s) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

EXPORT CUresult cuStreamQuery(void *s) {
    LOCK();
    NEED_CTX();
    if (!streamOK(s)) return CUDA_ERROR_INVALID_HANDLE;
    return wedged ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

EXPORT CUresult cuStreamDestroy_v2(void *s) {
    LOCK();
    NEED_CTX();
    obj *o = find(K_STREAM, s);
    if (o == NULL) return CUDA_ERROR_INVALID_HANDLE;
    drop(o);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventCreate(void **e, unsigned flags) {
    LOCK();
    NEED_CTX();
    if (e == NULL || flags > 7) return CUDA_ERROR_INVALID_VALUE;
    obj *o = add(K_EVENT);
    o->flags = flags;
    lastEventFlags = flags;
    *e = o;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventRecord(void *e, void *s) {
    LOCK();
    NEED_CTX();
    obj *o = find(K_EVENT, e);
    if (o == NULL || !streamOK(s)) return CUDA_ERROR_INVALID_HANDLE;
    o->recorded = 1;
    o->pending = wedged;
    o->launchesAt = launches;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventQuery(void *e) {
    LOCK();
    NEED_CTX();
    obj *o = find(K_EVENT, e);
    if (o == NULL) return CUDA_ERROR_INVALID_HANDLE;
    return o->pending && wedged ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

EXPORT CUresult cuEventSynchronize(void *e) {
    for (;;) {
        pthread_mutex_lock(&mu);
        obj *o = find(K_EVENT, e);
        int w = o != NULL && o->pending && wedged;
        pthread_mutex_unlock(&mu);
        if (!w) break;
        usleep(1000);
    }
    LOCK();
    NEED_CTX();
    return find(K_EVENT, e) != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult elapsed(float *ms, void *a, void *b) {
    LOCK();
    NEED_CTX();
    obj *x = find(K_EVENT, a), *y = find(K_EVENT, b);
    if (ms == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (x == NULL || y == NULL || !x->recorded || !y->recorded || (x->flags & 2) || (y->flags & 2))
        return CUDA_ERROR_INVALID_HANDLE;
    if ((x->pending || y->pending) && wedged) return CUDA_ERROR_NOT_READY;
    *ms = perLaunchMS > 0 ? perLaunchMS * (float)(y->launchesAt - x->launchesAt) : elapsedMS;
    return CUDA_SUCCESS;
}

#ifndef FAKE_OLD_DRIVER
EXPORT CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b) { return elapsed(ms, a, b); }
#endif
EXPORT CUresult cuEventElapsedTime(float *ms, void *a, void *b) { return elapsed(ms, a, b); }

EXPORT CUresult cuEventDestroy_v2(void *e) {
    LOCK();
    NEED_CTX();
    obj *o = find(K_EVENT, e);
    if (o == NULL) return CUDA_ERROR_INVALID_HANDLE;
    drop(o);
    return CUDA_SUCCESS;
}
