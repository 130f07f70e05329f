/*
 * Long reads across a fork: one thread reads SIZE MiB with a single
 * getrandom() call, another with a single read() of /dev/urandom. Each
 * prints "READING <iface>" as it starts (the host stops and snapshots the
 * guest right then, in the middle of both reads), and "TAIL <iface> <hash>"
 * when done: a hash of the read's last MiB, produced after the snapshot.
 * Clones with new generation IDs must print different tails; clones with
 * the same ID (no fork) the same.
 *   usage: bigread [SIZE_MIB]        (default 64)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024 * 1024)

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

/* FNV-1a, 64 bits: enough to tell two tails apart. */
static uint64_t fnv(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (n--)
		h = (h ^ *p++) * 0x100000001b3ULL;
	return h;
}

static void *reader(void *arg)
{
	const char *iface = arg;
	unsigned char *buf = malloc(size);
	char line[128];
	ssize_t got;
	double t;
	int fd = -1;

	if (!buf || (iface[0] == 'u' && (fd = open("/dev/urandom", O_RDONLY)) < 0)) {
		snprintf(line, sizeof(line), "ERROR %s: no memory or no /dev/urandom\n", iface);
		say(line);
		return NULL;
	}
	snprintf(line, sizeof(line), "READING %s\n", iface);
	say(line);
	t = now();
	/* One call: the point is a single request that the fork cuts in two. */
	got = fd < 0 ? getrandom(buf, size, 0) : read(fd, buf, size);
	t = now() - t;
	if (got != (ssize_t)size)
		snprintf(line, sizeof(line), "ERROR %s: read %zd of %zu bytes\n", iface, got, size);
	else
		snprintf(line, sizeof(line), "TAIL %s %016llx %.3fs\n", iface,
			 (unsigned long long)fnv(buf + size - MIB, MIB), t);
	say(line);
	free(buf);
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
