/*
 * Long reads across a fork: one thread reads SIZE MiB with a single
 * getrandom() call, another with a single read() of /dev/urandom, each into
 * a page-aligned buffer zeroed first. Each prints a READING line as it
 * starts (the host stops and snapshots the guest right then, in the middle
 * of both reads, and finds how far each had got by reading the buffer
 * through the stopped guest's page tables: the first page whose first
 * bytes are still zero), and when done the hashes of its pages and of its
 * last MiB, so that the host finds the first page where a clone left the
 * stream of a clone that was not forked, and checks every page after it.
 * The lines are declared (and parsed) in harness/machinery/wire.py.
 *   usage: bigread [SIZE_MIB]        (default 64)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024 * 1024)
#define PAGE 4096
#define PER_LINE 256

static size_t size = 64 * (size_t)MIB;
static pthread_mutex_t out = PTHREAD_MUTEX_INITIALIZER;

/* One whole line at a time, at once: the host acts on READING. */
static void say(const char *line)
{
	pthread_mutex_lock(&out);
	fputs(line, stdout);
	fflush(stdout);
	pthread_mutex_unlock(&out);
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* FNV-1a over 64-bit words: enough to tell two runs of bytes apart. */
static uint64_t fnv(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL, w;

	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * 0x100000001b3ULL;
	}
	return h;
}

/* The PAGES lines, under one lock so that the two readers do not mix. */
static void pages(const char *iface, const unsigned char *buf)
{
	size_t n = size / PAGE, i, j;
	char hex[10];

	pthread_mutex_lock(&out);
	for (i = 0; i < n; i += PER_LINE) {
		printf("PAGES %s %zu", iface, i);
		for (j = i; j < n && j < i + PER_LINE; j++) {
			snprintf(hex, sizeof(hex), " %08x",
				 (unsigned int)fnv(buf + j * PAGE, PAGE));
			fputs(hex, stdout);
		}
		putchar('\n');
	}
	fflush(stdout);
	pthread_mutex_unlock(&out);
}

static void *reader(void *arg)
{
	const char *iface = arg;
	unsigned char *buf;
	char line[128];
	ssize_t got;
	double t;
	int fd = -1;

	buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED || (iface[0] == 'u' && (fd = open("/dev/urandom", O_RDONLY)) < 0)) {
		snprintf(line, sizeof(line), "ERROR %s: no memory or no /dev/urandom\n", iface);
		say(line);
		return NULL;
	}
	/* Present and zero: the host tells written pages from the rest. */
	memset(buf, 0, size);
	snprintf(line, sizeof(line), "READING %s %#lx %zu\n", iface,
		 (unsigned long)buf, size / PAGE);
	say(line);
	t = now();
	/* One call: the point is a single request that the fork cuts in two. */
	got = fd < 0 ? getrandom(buf, size, 0) : read(fd, buf, size);
	t = now() - t;
	if (got != (ssize_t)size) {
		snprintf(line, sizeof(line), "ERROR %s: read %zd of %zu bytes\n", iface, got, size);
		say(line);
		return NULL;
	}
	pages(iface, buf);
	snprintf(line, sizeof(line), "TAIL %s %016llx %.3fs\n", iface,
		 (unsigned long long)fnv(buf + size - MIB, MIB), t);
	say(line);
	munmap(buf, size);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t a, b;
	cpu_set_t all;

	/* record-server, which runs this, is pinned to CPU 0: a reader per CPU. */
	CPU_ZERO(&all);
	CPU_SET(0, &all);
	CPU_SET(1, &all);
	sched_setaffinity(0, sizeof(all), &all);

	if (argc > 1)
		size = strtoul(argv[1], NULL, 10) * MIB;
	if (size < 2 * MIB)
		size = 2 * MIB;
	pthread_create(&a, NULL, reader, "getrandom");
	pthread_create(&b, NULL, reader, "urandom");
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return 0;
}
