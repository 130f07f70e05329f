/*
 * Bind a driver with each of its probe's allocations failed in turn (the
 * kernel's fail-nth fault injection, failslab), so that every error path
 * of the probe runs, those after the ACPI notify handler is installed
 * included:
 *   failsweep DRVDIR DEV      write DEV to DRVDIR/bind
 * Attempt n makes the n-th allocation failslab lets through fail (the
 * caller sets which: tests/guest/vmgenid.sh); n grows until an attempt
 * runs with no allocation failed, which is left bound. An attempt that
 * binds although an allocation failed is unbound before the next one.
 * Prints "SWEEP attempts N failed F ok yes|no"; exits 1 on a usage error
 * or if the last, fault-free attempt fails.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sysfs.h"

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

int main(int argc, char **argv)
{
	unsigned int n, failed = 0;
	int ret;

	if (argc != 3) {
		fprintf(stderr, "usage: failsweep DRVDIR DEV\n");
		return 1;
	}
	nth_fd = open("/proc/thread-self/fail-nth", O_RDWR);
	if (nth_fd < 0) {
		perror("failsweep: /proc/thread-self/fail-nth (CONFIG_FAULT_INJECTION?)");
		return 1;
	}
	for (n = 1; n <= MAX_ATTEMPTS; n++) {
		set_nth(n);
		ret = write_to(argv[1], "bind", argv[2]);
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
		/* Bound although an allocation failed: unbind for the next. */
		if (write_to(argv[1], "unbind", argv[2])) {
			perror("failsweep: unbind");
			return 1;
		}
	}
	set_nth(0);
	printf("SWEEP attempts %u failed %u ok no\n", n - 1, failed);
	fprintf(stderr, "failsweep: still failing allocations after %d attempts\n", MAX_ATTEMPTS);
	return 1;
}
