/* Bench-only (tests/bench/bench_soak.py --slow-disk MS): a slow disk for one process.
 * Preloaded (LD_PRELOAD), every fsync and fdatasync of a file under SLOWDISK_PREFIX waits
 * SLOWDISK_MS milliseconds first, as on network storage or an SD card; other files and
 * every write are untouched (writes land in the page cache on a slow disk too). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void wait_if_ours(int fd) {
    const char *prefix = getenv("SLOWDISK_PREFIX");
    const char *ms = getenv("SLOWDISK_MS");
    char link[64], path[4096];
    if (!prefix || !ms) return;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n < 0) return;
    path[n] = 0;
    if (strncmp(path, prefix, strlen(prefix)) != 0) return;
    long wait = atol(ms);
    struct timespec t = {wait / 1000, (wait % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    wait_if_ours(fd);
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    wait_if_ours(fd);
    return real(fd);
}
