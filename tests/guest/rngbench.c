/*
 * getrandom(2) throughput for make bench-rng: calls per second for 16-byte
 * and 4 KiB reads over a fixed time, so that the stock and the patched
 * kernel can be compared side by side (the patch adds a check to this path).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 16, 4096 };
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	static char buf[4096];
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		double t0 = now(), t;
		long calls = 0;

		do {
			int k;

			for (k = 0; k < 64; k++)
				if (getrandom(buf, sizes[i], 0) != (ssize_t)sizes[i])
					return 1;
			calls += 64;
			t = now();
		} while (t - t0 < secs);
		printf("RNGBENCH size=%zu calls_per_s=%.0f\n", sizes[i], calls / (t - t0));
	}
	return 0;
}
