/*
 * A fake libamd_smi for gpuwatt's tests: every function the amdsmi binding uses, with known
 * values, written from the amdsmi.h API reference (no AMD header is needed or copied).
 *
 * Build: gcc -shared -fPIC -o libamd_smi.so fakeamdsmi.c
 *
 * Two sockets with one GPU each:
 *   0  "AMD Instinct MI300X (fake)": current_socket_power works, average_socket_power is
 *      marked unsupported (0xFFFF, as the 6.x library writes it where the metrics lack it),
 *      the edge temperature is AMDSMI_STATUS_NOT_SUPPORTED (MI300X has no edge sensor).
 *   1  "AMD Instinct MI250X (fake)": average_socket_power works, current_socket_power is
 *      0xFFFF; amdsmi_get_energy_count returns AMDSMI_STATUS_NOT_SUPPORTED.
 *
 * The library's version is set with fakeSetVersion(year, major, minor, release) before
 * amdsmi_init (default 24.6.2.0, ROCm 6.2): a year of 0 gives the year-less shape of
 * amdsmi_version_t (ROCm 6.4 and later). amdsmi_get_power_info lays amdsmi_power_info_t
 * out as that version does, with the other fields filled so that reading at another
 * version's offsets gives wrong figures. fakeSetEnergy sets GPU i's raw accumulator (so a
 * test can make it wrap); fakeSetPower its current and average socket power.
 */
#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int amdsmi_status_t;
enum {
    AMDSMI_STATUS_SUCCESS = 0,
    AMDSMI_STATUS_INVAL = 1,
    AMDSMI_STATUS_NOT_SUPPORTED = 2,
    AMDSMI_STATUS_NOT_FOUND = 31,
    AMDSMI_STATUS_NOT_INIT = 32,
    AMDSMI_STATUS_INSUFFICIENT_SIZE = 41,
};

#define NGPU 2

struct gpu {
    const char *name, *uuid;
    uint64_t bdf;
    uint32_t current_w, average_w;
    uint64_t energy;
    int energy_status;
    uint32_t gfx_mhz, mem_mhz;
    int64_t hotspot_c, edge_c;
    int edge_status;
    uint32_t gfx_activity, umc_activity;
    uint64_t cap_uw, default_cap_uw;
};

static struct gpu gpus[NGPU] = {
    {"AMD Instinct MI300X (fake)", "a1ff74b5-0000-1000-80d0-0c0000000001",
     (0x0000ULL << 16) | (0x0c << 8) | (0 << 3) | 0,
     145, 0xFFFF, 1000000, AMDSMI_STATUS_SUCCESS, 132, 900, 38, 0, AMDSMI_STATUS_NOT_SUPPORTED,
     0, 0, 750000000ULL, 750000000ULL},
    {"AMD Instinct MI250X (fake)", "a1ff74b5-0000-1000-80d0-2a0000000002",
     (0x0001ULL << 16) | (0x2a << 8) | (1 << 3) | 1,
     0xFFFF, 90, 0, AMDSMI_STATUS_NOT_SUPPORTED, 800, 1600, 41, 35, AMDSMI_STATUS_SUCCESS,
     3, 1, 500000000ULL, 560000000ULL},
};

static int inits;
static uint32_t v_year = 24, v_major = 6, v_minor = 2, v_release = 0;
static char v_build[64] = "24.6.2.0";

#define SOCKET(i) ((void *)(uintptr_t)(0x5000 + (i)))
#define GPU(i) ((void *)&gpus[i])

static struct gpu *gpu_of(void *h) {
    for (int i = 0; i < NGPU; i++)
        if (h == (void *)&gpus[i]) return &gpus[i];
    return 0;
}

EXPORT void fakeSetVersion(uint32_t year, uint32_t major, uint32_t minor, uint32_t release) {
    v_year = year, v_major = major, v_minor = minor, v_release = release;
    char *p = v_build;
    int n = 0;
    uint32_t parts[4] = {year, major, minor, release};
    for (int i = year ? 0 : 1; i < 4; i++) {
        if (n) p[n++] = '.';
        char tmp[12];
        int k = 0;
        uint32_t x = parts[i];
        do { tmp[k++] = '0' + x % 10; x /= 10; } while (x);
        while (k) p[n++] = tmp[--k];
    }
    p[n] = 0;
}
EXPORT void fakeSetEnergy(int i, uint64_t raw) { gpus[i].energy = raw; }
EXPORT void fakeSetPower(int i, uint32_t current_w, uint32_t average_w) {
    gpus[i].current_w = current_w, gpus[i].average_w = average_w;
}
EXPORT int fakeInitCount(void) { return inits; }

EXPORT amdsmi_status_t amdsmi_init(uint64_t flags) {
    if (!(flags & 2)) return AMDSMI_STATUS_INVAL; /* gpuwatt asks for AMD GPUs */
    inits++;
    return AMDSMI_STATUS_SUCCESS;
}
EXPORT amdsmi_status_t amdsmi_shut_down(void) {
    if (inits > 0) inits--;
    return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_status_code_to_string(amdsmi_status_t s, const char **str) {
    if (!str) return AMDSMI_STATUS_INVAL;
    switch (s) {
    case AMDSMI_STATUS_NOT_SUPPORTED: *str = "Feature not supported"; break;
    case AMDSMI_STATUS_NOT_INIT: *str = "Processor not initialized"; break;
    default: *str = "fake status"; break;
    }
    return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_lib_version(void *out) {
    if (!inits) return AMDSMI_STATUS_NOT_INIT;
    if (!out) return AMDSMI_STATUS_INVAL;
    uint32_t *w = out;
    if (v_year) {
        w[0] = v_year, w[1] = v_major, w[2] = v_minor, w[3] = v_release;
    } else {
        w[0] = v_major, w[1] = v_minor, w[2] = v_release, w[3] = 0;
    }
    *(const char **)((char *)out + 16) = v_build;
    return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_socket_handles(uint32_t *count, void **handles) {
    if (!inits) return AMDSMI_STATUS_NOT_INIT;
    if (!count) return AMDSMI_STATUS_INVAL;
    if (!handles) { *count = NGPU; return AMDSMI_STATUS_SUCCESS; }
    uint32_t n = *count < NGPU ? *count : NGPU;
    for (uint32_t i = 0; i < n; i++) handles[i] = SOCKET(i);
    *count = n;
    return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_processor_handles(void *socket, uint32_t *count, void **handles) {
    if (!inits) return AMDSMI_STATUS_NOT_INIT;
    uintptr_t s = (uintptr_t)socket - 0x5000;
    if (!count || s >= NGPU) return AMDSMI_STATUS_INVAL;
    if (!handles) { *count = 1; return AMDSMI_STATUS_SUCCESS; }
    if (*count < 1) return AMDSMI_STATUS_INSUFFICIENT_SIZE;
    handles[0] = GPU(s);
    *count = 1;
    return AMDSMI_STATUS_SUCCESS;
}

#define DEV(h)                                        \
    struct gpu *g = gpu_of(h);                        \
    if (!inits) return AMDSMI_STATUS_NOT_INIT;        \
    if (!g) return AMDSMI_STATUS_NOT_FOUND;

EXPORT amdsmi_status_t amdsmi_get_gpu_asic_info(void *h, void *info) {
    DEV(h);
    if (!info) return AMDSMI_STATUS_INVAL;
    memset(info, 0, 256 + 64);
    strncpy(info, g->name, 255);
    return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_gpu_device_uuid(void *h, unsigned int *len, char *uuid) {
    DEV(h);
    if (!len || !uuid) return AMDSMI_STATUS_INVAL;
    if (*len < 38) return AMDSMI_STATUS_INSUFFICIENT_SIZE;
    strncpy(uuid, g->uuid, *len - 1);
    uuid[*len - 1] = 0;
    *len = strlen(uuid);
    return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_gpu_device_bdf(void *h, uint64_t *bdf) {
    DEV(h);
    if (!bdf) return AMDSMI_STATUS_INVAL;
    *bdf = g->bdf;
    return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_power_info(void *h, void *info) {
    DEV(h);
    if (!info) return AMDSMI_STATUS_INVAL;
    char *b = info;
    if (v_year) { /* ROCm 6.0-6.3: 17 x uint32 */
        uint32_t w[17] = {g->current_w, g->average_w, 812, 805, 1100, 750};
        memcpy(b, w, sizeof w);
    } else { /* 6.4 (40 bytes) and 7.x (192): uint64 socket_power first */
        uint64_t socket_uw = 987654321ULL; /* the host-only field: wrong if read as watts */
        memcpy(b, &socket_uw, 8);
        memcpy(b + 8, &g->current_w, 4);
        memcpy(b + 12, &g->average_w, 4);
        if (v_major == 25) {
            uint32_t w[6] = {812, 805, 1100, 750, 0, 0};
            memcpy(b + 16, w, sizeof w);
        } else {
            uint64_t v[3] = {812, 805, 1100};
            uint32_t limit = 750;
            memcpy(b + 16, v, sizeof v);
            memcpy(b + 40, &limit, 4);
            memset(b + 44, 0, 192 - 44);
        }
    }
    return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_power_cap_info(void *h, uint32_t sensor, uint64_t *info) {
    DEV(h);
    if (!info || sensor != 0) return AMDSMI_STATUS_INVAL;
    memset(info, 0, 8 * 8);
    info[0] = g->cap_uw, info[1] = g->default_cap_uw, info[2] = 2100, info[3] = 0, info[4] = g->default_cap_uw;
    return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_energy_count(void *h, uint64_t *acc, float *res, uint64_t *ts) {
    DEV(h);
    if (!acc || !res || !ts) return AMDSMI_STATUS_INVAL;
    if (g->energy_status) return g->energy_status;
    *acc = g->energy;
    *res = 15.3f;
    *ts = 1767225600000000000ULL;
    return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_clock_info(void *h, uint32_t type, void *info) {
    DEV(h);
    if (!info) return AMDSMI_STATUS_INVAL;
    uint32_t w[7] = {0, 0, 0, 0, 0, 0, 0};
    switch (type) {
    case 0: w[0] = g->gfx_mhz, w[1] = 132, w[2] = 2100; break;
    case 4: w[0] = g->mem_mhz, w[1] = 900, w[2] = 1300; break;
    default: return AMDSMI_STATUS_NOT_SUPPORTED;
    }
    memcpy(info, w, sizeof w);
    return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_temp_metric(void *h, uint32_t type, uint32_t metric, int64_t *t) {
    DEV(h);
    if (!t || metric != 0) return AMDSMI_STATUS_INVAL;
    switch (type) {
    case 0:
        if (g->edge_status) return g->edge_status;
        *t = g->edge_c;
        return AMDSMI_STATUS_SUCCESS;
    case 1: *t = g->hotspot_c; return AMDSMI_STATUS_SUCCESS;
    }
    return AMDSMI_STATUS_NOT_SUPPORTED;
}

EXPORT amdsmi_status_t amdsmi_get_gpu_activity(void *h, uint32_t *info) {
    DEV(h);
    if (!info) return AMDSMI_STATUS_INVAL;
    memset(info, 0, 16 * 4);
    info[0] = g->gfx_activity, info[1] = g->umc_activity, info[2] = 0;
    return AMDSMI_STATUS_SUCCESS;
}
