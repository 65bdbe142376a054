/*
 * A fake libnvidia-ml for gpuwatt's tests: every function the nvml binding uses, with known
 * values, written from the NVML documentation (no NVIDIA header is needed or copied).
 *
 * Build: gcc -shared -fPIC -o libnvidia-ml.so.1 fakenvml.c [-DFAKE_OLD_DRIVER]
 *
 * Two GPUs:
 *   0  "Fake H100 80GB HBM3": everything works except the memory-scope instant power field
 *      (per-field NVML_ERROR_NOT_SUPPORTED) and nvmlDeviceGetPerformanceState, which is
 *      deliberately absent from the library.
 *   1  "Fake Tesla V100": an older board: power fields, energy counter and sample buffer
 *      not supported, temperature reports NVML_ERROR_GPU_IS_LOST, utilization
 *      NVML_ERROR_NO_PERMISSION.
 * -DFAKE_RING=N makes the sample ring hold N entries instead of 120.
 * With -DFAKE_OLD_DRIVER nvmlDeviceGetCurrentClocksEventReasons is absent too, so callers
 * must fall back to nvmlDeviceGetCurrentClocksThrottleReasons (which reports a different
 * mask, so a test can tell which one was used).
 *
 * Time is simulated: fakeSetTimeUS sets "now" (µs since 1970; default 2026-01-01T00:00:00Z,
 * gpuwatt's virtual-clock epoch). Field values carry "now" as their timestamp: the real driver
 * (580, H200) stamps them with the time of the call, not of the sensor's update. The
 * TOTAL_POWER sample ring holds at most 120 entries (FAKE_RING), filled by fakeAddSample.
 */
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_UNKNOWN = 999,
};

enum {
    VT_DOUBLE = 0, VT_UINT = 1, VT_ULONG = 2, VT_ULONGLONG = 3,
    VT_SLONGLONG = 4, VT_SINT = 5, VT_USHORT = 6,
};

typedef union {
    double dVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    long long sllVal;
    int siVal;
    unsigned short usVal;
} nvmlValue_t;

typedef struct {
    unsigned int fieldId;
    unsigned int scopeId;
    long long timestamp;
    long long latencyUsec;
    int valueType;
    nvmlReturn_t nvmlReturn;
    nvmlValue_t value;
} nvmlFieldValue_t;

typedef struct {
    unsigned long long timeStamp;
    nvmlValue_t sampleValue;
} nvmlSample_t;

typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef struct {
    unsigned int gpu, memory;
} nvmlUtilization_t;

_Static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t");
_Static_assert(offsetof(nvmlFieldValue_t, value) == 32, "nvmlFieldValue_t.value");
_Static_assert(sizeof(nvmlSample_t) == 16, "nvmlSample_t");
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t");
_Static_assert(sizeof(nvmlUtilization_t) == 8, "nvmlUtilization_t");

struct fakedev {
    int index;
    const char *name, *uuid, *busId, *busIdLegacy;
    unsigned int powerMW, limitMW, defaultLimitMW, smMHz, memMHz;
};
typedef struct fakedev *nvmlDevice_t;

static struct fakedev devs[2] = {
    {0, "Fake H100 80GB HBM3", "GPU-00000000-1111-2222-3333-444444444444",
     "00000000:19:00.0", "0000:19:00.0", 123456, 700000, 700000, 1980, 2619},
    {1, "Fake Tesla V100", "GPU-55555555-6666-7777-8888-999999999999",
     "00000000:3B:00.0", "0000:3B:00.0", 55000, 250000, 300000, 1380, 877},
};

static int initCount;
static unsigned long long nowUS = 1767225600000000ULL; /* 2026-01-01T00:00:00Z */

#ifndef FAKE_RING
#define FAKE_RING 120
#endif
#define RING FAKE_RING
static struct { unsigned long long ts; unsigned int mw; } ring[RING];
static int ringStart, ringLen;

/* ---- control functions for tests (not NVML) ---- */

EXPORT void fakeSetTimeUS(unsigned long long us) { nowUS = us; }
EXPORT int fakeInitCount(void) { return initCount; }
EXPORT void fakeClearSamples(void) { ringStart = ringLen = 0; }
EXPORT void fakeAddSample(unsigned long long ts, unsigned int mw) {
    int i;
    if (ringLen == RING) {
        ringStart = (ringStart + 1) % RING;
        ringLen--;
    }
    i = (ringStart + ringLen) % RING;
    ring[i].ts = ts;
    ring[i].mw = mw;
    ringLen++;
}

/* ---- NVML ---- */

#define NEED_INIT() do { if (initCount == 0) return NVML_ERROR_UNINITIALIZED; } while (0)
/* fakeSetLost(1): every call on a device fails with GPU_IS_LOST from now on, as when a GPU
   falls off the bus part-way through a run. */
static int lost = 0;
EXPORT void fakeSetLost(int v) { lost = v; }

/* fakeSetHang("nvmlDeviceGetTotalEnergyConsumption"): every later call of that function
   blocks, as a driver call that never returns, until fakeSetHang("") lets it go. */
static volatile int hangOn = 0;
static char hangFn[96];
EXPORT void fakeSetHang(const char *fn) {
    if (fn != NULL && fn[0] != 0) {
        strncpy(hangFn, fn, sizeof hangFn - 1);
        hangOn = 1;
    } else {
        hangOn = 0;
    }
}
#define HANG() do { while (hangOn && strcmp(hangFn, __func__) == 0) usleep(1000); } while (0)

#define NEED_DEV(d) do { HANG(); NEED_INIT(); if ((d) != &devs[0] && (d) != &devs[1]) return NVML_ERROR_INVALID_ARGUMENT; if (lost) return NVML_ERROR_GPU_IS_LOST; } while (0)

EXPORT nvmlReturn_t nvmlInit_v2(void) { initCount++; return NVML_SUCCESS; }

EXPORT nvmlReturn_t nvmlShutdown(void) {
    HANG();
    NEED_INIT();
    initCount--;
    return NVML_SUCCESS;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t r) {
    switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    }
    return "Unknown Error";
}

static nvmlReturn_t copyString(char *dst, unsigned int n, const char *src) {
    if (dst == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(src) + 1 > n) return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(dst, src);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned int n) {
    NEED_INIT();
    return copyString(v, n, "999.88.77");
}

EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *v, unsigned int n) {
    NEED_INIT();
    return copyString(v, n, "13.999.88.77");
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) {
    NEED_INIT();
    if (n == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    *n = 2;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d) {
    NEED_INIT();
    if (d == NULL || i >= 2) return NVML_ERROR_INVALID_ARGUMENT;
    *d = &devs[i];
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int n) {
    NEED_DEV(d);
    return copyString(name, n, d->name);
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int n) {
    NEED_DEV(d);
    return copyString(uuid, n, d->uuid);
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p) {
    NEED_DEV(d);
    if (p == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    memset(p, 0, sizeof *p);
    strcpy(p->busIdLegacy, d->busIdLegacy);
    strcpy(p->busId, d->busId);
    p->bus = d->index == 0 ? 0x19 : 0x3b;
    p->pciDeviceId = 0x233010de;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw) {
    NEED_DEV(d);
    if (mw == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    *mw = d->powerMW;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int *mw) {
    NEED_DEV(d);
    if (mw == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    *mw = d->limitMW;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t d, unsigned int *mw) {
    NEED_DEV(d);
    if (mw == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    *mw = d->defaultLimitMW;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj) {
    NEED_DEV(d);
    if (mj == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    if (d->index != 0) return NVML_ERROR_NOT_SUPPORTED;
    *mj = 123456789012ULL;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int *mhz) {
    NEED_DEV(d);
    if (mhz == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    switch (type) {
    case 0: /* graphics */
    case 1: /* SM */
        *mhz = d->smMHz;
        return NVML_SUCCESS;
    case 2: /* memory */
        *mhz = d->memMHz;
        return NVML_SUCCESS;
    }
    return NVML_ERROR_NOT_SUPPORTED;
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *c) {
    NEED_DEV(d);
    if (c == NULL || sensor != 0) return NVML_ERROR_INVALID_ARGUMENT;
    if (d->index != 0) return NVML_ERROR_GPU_IS_LOST;
    *c = 41;
    return NVML_SUCCESS;
}

#ifndef FAKE_OLD_DRIVER
EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *m) {
    NEED_DEV(d);
    if (m == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    *m = d->index == 0 ? 0x5ULL : 0ULL; /* gpu_idle | sw_power_cap */
    return NVML_SUCCESS;
}
#endif

EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long *m) {
    NEED_DEV(d);
    if (m == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    *m = d->index == 0 ? 0x40ULL : 0ULL; /* hw_thermal_slowdown */
    return NVML_SUCCESS;
}

/* nvmlDeviceGetPerformanceState is deliberately absent. */

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u) {
    NEED_DEV(d);
    if (u == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    if (d->index != 0) return NVML_ERROR_NO_PERMISSION;
    u->gpu = 87;
    u->memory = 42;
    return NVML_SUCCESS;
}

/*
 * Field values of device 0 (field, scope): value type and value:
 *   (186 instant, 0 gpu)    uint      250000 mW
 *   (185 average, 0 gpu)    uint      240000 mW
 *   (186, 1 module)         ulonglong 400000 mW
 *   (185, 1 module)         slonglong 380000 mW
 *   (186, 2 memory)         NVML_ERROR_NOT_SUPPORTED
 *   (185, 2 memory)         double    39000.5 mW
 *   (1000, any)             sint      -5
 *   (1001, any)             ushort    7
 *   (1002, any)             ulong     1<<40
 *   anything else           NVML_ERROR_INVALID_ARGUMENT
 * Every entry carries now as its timestamp and 3 µs as its latency.
 * Device 1 answers NVML_ERROR_NOT_SUPPORTED for every field.
 */
EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int n, nvmlFieldValue_t *v) {
    int i;
    NEED_DEV(d);
    if (v == NULL || n <= 0) return NVML_ERROR_INVALID_ARGUMENT;
    for (i = 0; i < n; i++) {
        nvmlFieldValue_t *f = &v[i];
        f->timestamp = (long long)nowUS;
        f->latencyUsec = 3;
        f->nvmlReturn = NVML_SUCCESS;
        f->value.ullVal = 0;
        if (d->index != 0) {
            f->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
            continue;
        }
        switch (f->fieldId) {
        case 185:
        case 186:
            if (f->scopeId == 0) {
                f->valueType = VT_UINT;
                f->value.uiVal = f->fieldId == 186 ? 250000 : 240000;
            } else if (f->scopeId == 1) {
                if (f->fieldId == 186) {
                    f->valueType = VT_ULONGLONG;
                    f->value.ullVal = 400000;
                } else {
                    f->valueType = VT_SLONGLONG;
                    f->value.sllVal = 380000;
                }
            } else if (f->scopeId == 2 && f->fieldId == 185) {
                f->valueType = VT_DOUBLE;
                f->value.dVal = 39000.5;
            } else {
                f->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
            }
            break;
        case 1000:
            f->valueType = VT_SINT;
            f->value.siVal = -5;
            break;
        case 1001:
            f->valueType = VT_USHORT;
            f->value.usVal = 7;
            break;
        case 1002:
            f->valueType = VT_ULONG;
            f->value.ulVal = 1UL << 40;
            break;
        default:
            f->nvmlReturn = NVML_ERROR_INVALID_ARGUMENT;
        }
    }
    return NVML_SUCCESS;
}

/*
 * nvmlDeviceGetSamples, NVML_TOTAL_POWER_SAMPLES (0) only, device 0 only, as driver 580
 * behaves on an H200: with samples == NULL it succeeds and stores the ring's capacity in
 * *count, whatever lastSeen is. With a buffer it returns the entries newer than lastSeen,
 * oldest first, as unsigned int mW; none: NVML_ERROR_NOT_FOUND. A buffer smaller than
 * needed is filled and the call succeeds (the real driver does that too; which entries it
 * keeps then is not known, the fake keeps the oldest).
 */
EXPORT nvmlReturn_t nvmlDeviceGetSamples(nvmlDevice_t d, int type, unsigned long long lastSeen,
                                         int *valType, unsigned int *count, nvmlSample_t *samples) {
    int i, k = 0;
    NEED_DEV(d);
    if (count == NULL || valType == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    if (d->index != 0 || type != 0) return NVML_ERROR_NOT_SUPPORTED;
    *valType = VT_UINT;
    if (samples == NULL) {
        *count = RING;
        return NVML_SUCCESS;
    }
    for (i = 0; i < ringLen && k < (int)*count; i++) {
        int j = (ringStart + i) % RING;
        if (ring[j].ts <= lastSeen) continue;
        samples[k].timeStamp = ring[j].ts;
        samples[k].sampleValue.ullVal = 0;
        samples[k].sampleValue.uiVal = ring[j].mw;
        k++;
    }
    if (k == 0) return NVML_ERROR_NOT_FOUND;
    *count = (unsigned int)k;
    return NVML_SUCCESS;
}

/*
 * nvmlDeviceGetProcessUtilization, device 0 only (device 1: NOT_SUPPORTED). The fake keeps a
 * table of per-process samples (fakeAddProcessSample; fakeClearProcessSamples). With
 * utilization == NULL it returns NVML_ERROR_INSUFFICIENT_SIZE and the number of samples newer
 * than lastSeen in *count (as the documentation says: ask for the size first); with a
 * buffer, those samples oldest first (INSUFFICIENT_SIZE if *count is too small); none newer:
 * NVML_ERROR_NOT_FOUND.
 */
typedef struct {
    unsigned int pid;
    unsigned long long timeStamp;
    unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

#define PROCS 128
static nvmlProcessUtilizationSample_t procs[PROCS];
static int nprocs;

EXPORT void fakeAddProcessSample(unsigned int pid, unsigned long long ts, unsigned int sm) {
    if (nprocs == PROCS) {
        memmove(procs, procs + 1, (PROCS - 1) * sizeof procs[0]);
        nprocs--;
    }
    procs[nprocs].pid = pid;
    procs[nprocs].timeStamp = ts;
    procs[nprocs].smUtil = sm;
    procs[nprocs].memUtil = sm / 2;
    procs[nprocs].encUtil = 0;
    procs[nprocs].decUtil = 0;
    nprocs++;
}
EXPORT void fakeClearProcessSamples(void) { nprocs = 0; }
static int procCalls;
EXPORT int fakeProcessCalls(void) { return procCalls; }

EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d, nvmlProcessUtilizationSample_t *u,
                                                    unsigned int *count, unsigned long long lastSeen) {
    int i, n = 0, k = 0;
    NEED_DEV(d);
    procCalls++;
    if (count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    if (d->index != 0) return NVML_ERROR_NOT_SUPPORTED;
    for (i = 0; i < nprocs; i++)
        if (procs[i].timeStamp > lastSeen) n++;
    if (n == 0) return NVML_ERROR_NOT_FOUND;
    if (u == NULL || *count < (unsigned int)n) {
        *count = (unsigned int)n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (i = 0; i < nprocs; i++)
        if (procs[i].timeStamp > lastSeen) u[k++] = procs[i];
    *count = (unsigned int)k;
    return NVML_SUCCESS;
}
