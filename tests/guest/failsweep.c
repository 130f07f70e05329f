/*
 * Fail each kernel allocation of a driver probe in turn (the kernel's
 * fail-nth fault injection, failslab), to exercise every error path of
 * the probe, including those after the ACPI notify handler is installed:
 *   failsweep bind DRVDIR DEV     write DEV to DRVDIR/bind
 *   failsweep insmod MODULE.ko    load the module (its init probes)
 * Attempt n makes the n-th allocation of the bind or load fail; n grows
 * until an attempt runs with no allocation failed, which is left bound or
 * loaded. A successful attempt with a failure injected is undone (unbind,
 * rmmod) before the next one. Needs CONFIG_FAILSLAB, and failslab's
 * ignore-gfp-wait set to N (GFP_KERNEL allocations are skipped otherwise).
 * Prints "SWEEP attempts N failed F ok yes|no"; exits 1 on a usage error
 * or if the last, fault-free attempt fails.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_ATTEMPTS 2000

static int nth_fd;

static void set_nth(unsigned int n)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%u", n);

	if (pwrite(nth_fd, buf, len, 0) != len) {
		perror("failsweep: /proc/thread-self/fail-nth");
		exit(1);
	}
}

/* fail-nth left over: nonzero means fewer than n allocations were made. */
static unsigned int get_nth(void)
{
	char buf[16] = "";

	if (pread(nth_fd, buf, sizeof(buf) - 1, 0) < 0) {
		perror("failsweep: /proc/thread-self/fail-nth");
		exit(1);
	}
	return strtoul(buf, NULL, 10);
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY), ret;

	if (fd < 0)
		return -1;
	ret = write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : -1;
	close(fd);
	return ret;
}

int main(int argc, char **argv)
{
	int bind = argc == 4 && !strcmp(argv[1], "bind");
	int load = argc == 3 && !strcmp(argv[1], "insmod");
	char path[256], name[64] = "";
	unsigned int n, failed = 0;
	int fd, ret;

	if (!bind && !load) {
		fprintf(stderr, "usage: failsweep bind DRVDIR DEV | failsweep insmod MODULE.ko\n");
		return 1;
	}
	nth_fd = open("/proc/thread-self/fail-nth", O_RDWR);
	if (nth_fd < 0) {
		perror("failsweep: /proc/thread-self/fail-nth (CONFIG_FAULT_INJECTION?)");
		return 1;
	}
	/* Opened once, outside the sweep: only the bind or load counts. */
	if (bind) {
		snprintf(path, sizeof(path), "%s/bind", argv[2]);
	} else {
		const char *base = strrchr(argv[2], '/');

		snprintf(name, sizeof(name), "%s", base ? base + 1 : argv[2]);
		name[strcspn(name, ".")] = '\0';
	}
	fd = open(bind ? path : argv[2], bind ? O_WRONLY : O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		perror(bind ? path : argv[2]);
		return 1;
	}
	for (n = 1; n <= MAX_ATTEMPTS; n++) {
		set_nth(n);
		if (bind)
			ret = write(fd, argv[3], strlen(argv[3])) < 0 ? -1 : 0;
		else
			ret = syscall(SYS_finit_module, fd, "", 0);
		if (get_nth()) {
			set_nth(0);
			printf("SWEEP attempts %u failed %u ok %s\n", n, failed, ret ? "no" : "yes");
			if (ret)
				perror("failsweep: the attempt without a fault");
			return ret ? 1 : 0;
		}
		if (ret) {
			failed++;
			continue;
		}
		/* Bound or loaded although an allocation failed: undo it. */
		if (bind) {
			snprintf(path, sizeof(path), "%s/unbind", argv[2]);
			ret = write_str(path, argv[3]);
		} else {
			ret = syscall(SYS_delete_module, name, O_NONBLOCK);
		}
		if (ret) {
			perror("failsweep: undo");
			return 1;
		}
	}
	printf("SWEEP attempts %u failed %u ok no\n", n - 1, failed);
	fprintf(stderr, "failsweep: still failing allocations after %d attempts\n", MAX_ATTEMPTS);
	return 1;
}
