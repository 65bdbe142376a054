/*
 * gpuwatt_marks.h: region markers for `gpuwatt measure`, header-only, C99 and C++.
 *
 * `gpuwatt measure -- ./app` names a file in the environment variable GPUWATT_MARKS;
 * these functions append one line per marker to it:
 *
 *     begin NAME T
 *     end NAME T
 *
 * where T is CLOCK_MONOTONIC in seconds, the clock gpuwatt's recording runs on. gpuwatt
 * gives each begin/end pair its energy per GPU with a 95 % interval; regions may nest and
 * names may repeat. Without GPUWATT_MARKS every call does nothing (and costs a getenv).
 *
 * GPU work is asynchronous: synchronise before a marker so that the region ends when its
 * work ends, not when it was queued:
 *
 *     gpuwatt_begin("step");
 *     kernel<<<grid, block>>>(...);
 *     cudaDeviceSynchronize();
 *     gpuwatt_end("step");
 *
 * or give a sync function once: gpuwatt_set_sync(my_sync) (a void (*)(void)).
 * NAME must be one word (no blanks); a bad name is not written (the call returns -1).
 * Each call returns 0 when written or disabled, -1 on error (errno set).
 * POSIX only (open, write, clock_gettime). Under a strict -std=c99/c11 (no GNU extensions),
 * include this header before any system header, or compile with -D_POSIX_C_SOURCE=200112L;
 * the compilers' default modes (gnu17, C++) need nothing.
 */
#ifndef GPUWATT_MARKS_H
#define GPUWATT_MARKS_H

/* clock_gettime under a strict -std=c99 (effective where this header comes first). */
#if !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE) && !defined(_DEFAULT_SOURCE) && !defined(_XOPEN_SOURCE)
#define _POSIX_C_SOURCE 200112L
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*gpuwatt_sync_fn)(void);

/* The process's sync function: one per translation unit that includes this header. */
static gpuwatt_sync_fn gpuwatt_sync_ = 0;

static inline void gpuwatt_set_sync(gpuwatt_sync_fn fn) { gpuwatt_sync_ = fn; }

static inline int gpuwatt_enabled(void) {
    const char *p = getenv("GPUWATT_MARKS");
    return p != 0 && p[0] != 0;
}

static inline int gpuwatt_mark_(const char *verb, const char *name) {
    const char *path = getenv("GPUWATT_MARKS");
    char line[320];
    struct timespec ts;
    size_t i, n;
    int fd, len;
    ssize_t w;
    if (name == 0 || name[0] == 0 || strlen(name) > 200) {
        errno = EINVAL;
        return -1;
    }
    for (i = 0; name[i]; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c <= ' ' || c == 0x7f) {
            errno = EINVAL;
            return -1;
        }
    }
    if (path == 0 || path[0] == 0) {
        return 0;
    }
    if (gpuwatt_sync_) {
        gpuwatt_sync_();
    }
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
        return -1;
    }
    len = snprintf(line, sizeof line, "%s %s %lld.%09ld\n", verb, name, (long long)ts.tv_sec, (long)ts.tv_nsec);
    if (len < 0 || (size_t)len >= sizeof line) {
        errno = EINVAL;
        return -1;
    }
    /* O_APPEND: the line lands whole at the end, whoever else appends. */
    fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0) {
        return -1;
    }
    n = (size_t)len;
    w = write(fd, line, n);
    close(fd);
    return w == (ssize_t)n ? 0 : -1;
}

/* gpuwatt_begin marks the start of region name. */
static inline int gpuwatt_begin(const char *name) { return gpuwatt_mark_("begin", name); }

/* gpuwatt_end marks the end of region name. */
static inline int gpuwatt_end(const char *name) { return gpuwatt_mark_("end", name); }

#ifdef __cplusplus
}
#endif

#endif /* GPUWATT_MARKS_H */
