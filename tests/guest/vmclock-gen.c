/*
 * The vmclock page's VM generation counter as this guest reads it: proves,
 * with harness/suites/vmclock_gen.py, that what the harness writes into the
 * page as the VMM (flag VM_GEN_COUNTER_PRESENT, vm_generation_counter)
 * reaches guest memory, and which value each clone of a snapshot sees.
 *   vmclock-gen [DEV]          -> "VMCLOCK flags=0x<hex> counter=<n> seq=<n> marker=<n> via=mmap|read"
 *   vmclock-gen --read [DEV]   -> the same through read(), the driver's own seq_count loop
 *   vmclock-gen --nobody [DEV] -> as uid/gid 65534: "VMCLOCK-ACCESS uid=65534 open=<ok|ERRNO>
 *                                 mmap=<ok|ERRNO|-> read=<ok|ERRNO|->" (reported, not judged)
 * DEV defaults to /dev/vmclock0. The page is mapped read-only as the
 * driver allows; read() is the fallback when mmap fails. Errors print
 * "VMCLOCK-ERROR ..." and exit 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "vmclock.h"

#define PAGE 4096
#define NOBODY 65534

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* The seqcount reader's side, retried for up to a second. */
static int read_mapped(const volatile unsigned char *p, struct vmclock_view *v)
{
	double end = now() + 1;

	do {
		if (!vmclock_try_read(p, v))
			return 0;
	} while (now() < end);
	return -1;
}

/* The driver's read() copies under seq_count itself (-ETIMEDOUT if odd). */
static int read_file(int fd, struct vmclock_view *v)
{
	uint64_t buf[VMCLOCK_HEADER / 8];

	if (pread(fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf))
		return -1;
	vmclock_fields((const unsigned char *)buf, v);
	return 0;
}

static const char *err_name(int e)
{
	static char other[16];

	switch (e) {
	case EACCES: return "EACCES";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case ENODEV: return "ENODEV";
	case EINVAL: return "EINVAL";
	case EROFS: return "EROFS";
	case ETIMEDOUT: return "ETIMEDOUT";
	}
	snprintf(other, sizeof(other), "errno%d", e);
	return other;
}

/* What uid 65534 may do with the device: each step's outcome, no verdict. */
static int access_as_nobody(const char *dev)
{
	char op[16], rd[16];
	uint64_t buf[VMCLOCK_HEADER / 8];
	int fd;
	void *p;

	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY)) {
		printf("VMCLOCK-ERROR dropping to uid %d: %s\n", NOBODY, strerror(errno));
		return 1;
	}
	fd = open(dev, O_RDONLY);
	if (fd < 0) {
		printf("VMCLOCK-ACCESS uid=%d open=%s mmap=- read=-\n", (int)getuid(), err_name(errno));
		return 0;
	}
	p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, 0);
	snprintf(op, sizeof(op), "%s", p == MAP_FAILED ? err_name(errno) : "ok");
	snprintf(rd, sizeof(rd), "%s",
		 pread(fd, buf, sizeof(buf), 0) == (ssize_t)sizeof(buf) ? "ok" : err_name(errno));
	printf("VMCLOCK-ACCESS uid=%d open=ok mmap=%s read=%s\n", (int)getuid(), op, rd);
	return 0;
}

int main(int argc, char **argv)
{
	int nobody = 0, use_read = 0, i;
	const char *dev = "/dev/vmclock0", *via = "mmap";
	struct vmclock_view v;
	void *p = MAP_FAILED;
	int fd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--nobody")) {
			nobody = 1;
		} else if (!strcmp(argv[i], "--read")) {
			use_read = 1;
		} else {
			printf("VMCLOCK-ERROR usage: vmclock-gen [--nobody|--read] [DEV]\n");
			return 1;
		}
	}
	if (i < argc)
		dev = argv[i];
	if (nobody)
		return access_as_nobody(dev);
	fd = open(dev, O_RDONLY);
	if (fd < 0) {
		printf("VMCLOCK-ERROR open %s: %s\n", dev, strerror(errno));
		return 1;
	}
	if (!use_read) {
		p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			fprintf(stderr, "vmclock-gen: mmap %s: %s; reading it instead\n", dev, strerror(errno));
	}
	if (p == MAP_FAILED) {
		via = "read";
		if (read_file(fd, &v)) {
			printf("VMCLOCK-ERROR read %s: %s\n", dev, strerror(errno));
			return 1;
		}
	} else if (read_mapped(p, &v)) {
		printf("VMCLOCK-ERROR %s: seq_count odd or changing for 1 s (a writer never finished)\n", dev);
		return 1;
	}
	printf("VMCLOCK flags=0x%llx counter=%llu seq=%u marker=%llu via=%s\n",
	       (unsigned long long)v.flags, (unsigned long long)v.counter, v.seq,
	       (unsigned long long)v.marker, via);
	return 0;
}
