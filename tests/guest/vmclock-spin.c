/*
 * An unprivileged process noticing a fork from vmclock's page alone, as a
 * userspace library could (harness/suites/vmclock_unpriv.py): as uid/gid
 * 65534 it maps /dev/vmclock0 and spins on vm_generation_counter with no
 * system call at all until the value moves. Any syscall in the loop would
 * make it a kernel-assisted check; none is what the series' 0444 allows.
 *   vmclock-spin [DEV] -> "VMCLOCK-SPIN uid=65534 from=<n>" before the loop,
 *                         "VMCLOCK-MOVED from=<n> to=<m> spins=<k>" after it
 * Errors: "VMCLOCK-SPIN-ERROR <step>=<ERRNO or what>", exit 1; on a kernel
 * whose device is root's only, "open=EACCES".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vmclock.h"

#define NOBODY 65534
/* Bounds the first read only: an odd seq_count forever is a broken VMM. */
#define FIRST_TRIES 100000000ULL

static int fail(const char *step, const char *what)
{
	printf("VMCLOCK-SPIN-ERROR %s=%s\n", step, what);
	return 1;
}

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "/dev/vmclock0";
	uint64_t from, spins = 0, i;
	struct vmclock_view v;
	const volatile unsigned char *page;
	void *p;
	int fd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
		return fail("setuid", strerrorname_np(errno));
	fd = open(dev, O_RDONLY);
	if (fd < 0)
		return fail("open", strerrorname_np(errno));
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return fail("mmap", strerrorname_np(errno));
	page = p;
	for (i = 0; vmclock_try_read(page, &v); i++)
		if (i == FIRST_TRIES)
			return fail("read", "seq_count-never-even");
	from = v.counter;
	if (!(v.flags & VMCLOCK_FLAG_GEN_COUNTER))
		return fail("flags", "no-VM_GEN_COUNTER_PRESENT");
	printf("VMCLOCK-SPIN uid=%d from=%llu\n", (int)getuid(), (unsigned long long)from);
	/* Loads only from here on: the one way out is a new counter. */
	for (;;) {
		if (!vmclock_try_read(page, &v) && v.counter != from)
			break;
		spins++;
		__builtin_ia32_pause();
	}
	printf("VMCLOCK-MOVED from=%llu to=%llu spins=%llu\n", (unsigned long long)from,
	       (unsigned long long)v.counter, (unsigned long long)spins);
	return 0;
}
