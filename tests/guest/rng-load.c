/*
 * Load for the concurrency test: on every CPU, one thread each loops on
 * getrandom(2), read(/dev/urandom) and vDSO getrandom (when the kernel has
 * it), pinned, forever. Prints "RNG-LOAD cpus=N vdso=0|1" once started.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>
#include "vgetrandom.h"

static struct vgr vgr;
static int urnd;

struct job {
	int cpu, kind;
};

static void *loop(void *arg)
{
	struct job *j = arg;
	void *state = j->kind == 2 ? vgr_state(&vgr) : NULL;
	char buf[64];
	cpu_set_t cpus;

	CPU_ZERO(&cpus);
	CPU_SET(j->cpu, &cpus);
	sched_setaffinity(0, sizeof(cpus), &cpus);
	for (;;) {
		switch (j->kind) {
		case 0:
			if (getrandom(buf, sizeof(buf), 0) < 0)
				perror("getrandom");
			break;
		case 1:
			if (read(urnd, buf, sizeof(buf)) < 0)
				perror("/dev/urandom");
			break;
		default:
			vgr_get(&vgr, state, buf, sizeof(buf));
		}
	}
	return NULL;
}

int main(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	int vdso = vgr_init(&vgr) == 0;
	pthread_t th;
	int cpu, kind;

	urnd = open("/dev/urandom", O_RDONLY);
	if (urnd < 0 || n < 1) {
		perror("/dev/urandom");
		return 1;
	}
	for (cpu = 0; cpu < n; cpu++) {
		for (kind = 0; kind < 2 + vdso; kind++) {
			struct job *j = malloc(sizeof(*j));

			if (!j)
				return 1;
			*j = (struct job){ cpu, kind };
			pthread_create(&th, NULL, loop, j);
		}
	}
	printf("RNG-LOAD cpus=%ld vdso=%d\n", n, vdso);
	fflush(stdout);
	pause();
	return 0;
}
