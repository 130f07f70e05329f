/*
 * getrandom(2) throughput for make bench-rng: calls per second for 16-byte
 * and 4 KiB reads over a fixed time, so that the stock and the patched
 * kernel can be compared side by side (the patch adds a check to this path),
 * then the same through the vDSO's getrandom(), where the kernel has one.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include "vgetrandom.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct vgr vgr;
static void *vstate;

static ssize_t draw(int vdso, void *buf, size_t len)
{
	return vdso ? vgr_get(&vgr, vstate, buf, len) : getrandom(buf, len, 0);
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 16, 4096 };
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	static char buf[4096];
	unsigned int i;
	int vdso;

	if (vgr_init(&vgr) == 0)
		vstate = vgr_state(&vgr);
	for (vdso = 0; vdso <= !!vstate; vdso++) {
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			double t0 = now(), t;
			long calls = 0;

			do {
				int k;

				for (k = 0; k < 64; k++)
					if (draw(vdso, buf, sizes[i]) != (ssize_t)sizes[i])
						return 1;
				calls += 64;
				t = now();
			} while (t - t0 < secs);
			printf("RNGBENCH %s=%zu calls_per_s=%.0f\n", vdso ? "vdso" : "size",
			       sizes[i], calls / (t - t0));
		}
	}
	return 0;
}
