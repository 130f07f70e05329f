/*
 * Busy probe for the fork benchmark: shows how many random outputs a
 * running consumer gets after a VM fork that are identical across clones.
 *
 * Three threads call getrandom(2), read(/dev/urandom) and vDSO getrandom in
 * tight loops, 8 bytes at a time, storing output i in a ring tagged with i
 * before publishing i+1 in their sequence counter. The counters are read
 * by the host from the paused source: at their physical addresses (from
 * /proc/self/pagemap, the pages locked), with HMP xp, whatever process
 * each vCPU was running, checked against their virtual ones (HMP x, which
 * only a vCPU inside this process translates). Outputs numbered above
 * that value were produced after the snapshot.
 * An idle program woken by a request cannot show the window; this one is
 * running on the CPU when the restore happens.
 * When tests/kmod/rngprobe.ko is loaded, its in-kernel get_random_u32() and
 * get_random_u64() consumers are streams 3 and 4, their counters given as
 * physical addresses (HMP xp).
 * With "vdso" after the serial device, only the vDSO thread runs: nothing
 * else draws randomness, so the kernel learns of a fork only from the
 * hypervisor's notification or from the vDSO itself (make bench-fork's
 * vDSO-only rows). With "vdso-call", that thread makes 64 KiB calls and
 * keeps the first 8 bytes of each 4 KiB of a call as its outputs: almost
 * all of its time is inside calls, and in_call (address printed as
 * vdso-incall) says whether the snapshot cut one (the vdso-call phase).
 * Requests come on the serial line (default /dev/ttyS1); they, the answers
 * and the PROBE-READY banner are declared (and parsed) in the harness's
 * harness/machinery/wire.py.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <termios.h>
#include <unistd.h>
#include "rawtty.h"
#include "vgetrandom.h"

/* Deep enough for ~0.3 s of the fastest consumer (vDSO) under TCG. */
#define RING (1u << 20)

struct slot {
	uint64_t seq, val;
};

struct consumer {
	volatile uint64_t seq;	/* read by the host from guest memory */
	int kind;
	struct slot *ring;
};

static struct consumer cons[3];

/* The physical address of p (its page resident and locked), or 0. */
static unsigned long long phys_of(const volatile void *p)
{
	long psz = sysconf(_SC_PAGESIZE);
	uint64_t ent = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0)
		return 0;
	if (pread(fd, &ent, 8, (uintptr_t)p / psz * 8) != 8)
		ent = 0;
	close(fd);
	/* Bit 63: present; bits 0-54: the frame (0 without CAP_SYS_ADMIN). */
	if (!(ent >> 63) || !(ent & ((1ULL << 55) - 1)))
		return 0;
	return (ent & ((1ULL << 55) - 1)) * psz + (uintptr_t)p % psz;
}
static volatile int stopped;
static volatile uint64_t in_call;	/* read by the host, like seq */
static int vdso_call;
#define CALL (64 * 1024)
#define STRIDE 4096
static struct vgr vgr;
static int urnd;

static int produce(int kind, void *state, uint64_t *v)
{
	switch (kind) {
	case 0:
		return getrandom(v, 8, 0) == 8;
	case 1:
		return read(urnd, v, 8) == 8;
	default:
		return vgr_get(&vgr, state, v, 8) == 8;
	}
}

static void *loop(void *arg)
{
	struct consumer *c = arg;
	void *state = c->kind == 2 ? vgr_state(&vgr) : NULL;
	cpu_set_t cpus;
	uint64_t v;

	/* getrandom and urandom on different CPUs: each per-CPU crng then feeds
	 * one consumer, so same-GUID clones repeat in the same order. */
	CPU_ZERO(&cpus);
	CPU_SET(c->kind == 0 ? 0 : 1, &cpus);
	sched_setaffinity(0, sizeof(cpus), &cpus);

	if (c->kind == 2 && !state)
		return NULL;
	while (vdso_call && !stopped) {
		static uint8_t buf[CALL];

		__atomic_store_n(&in_call, 1, __ATOMIC_SEQ_CST);
		long got = vgr_get(&vgr, state, buf, CALL);

		__atomic_store_n(&in_call, 0, __ATOMIC_SEQ_CST);
		for (size_t i = 0; got == CALL && i < CALL; i += STRIDE) {
			memcpy(&v, buf + i, 8);
			c->ring[c->seq % RING] = (struct slot){ c->seq, v };
			__atomic_store_n(&c->seq, c->seq + 1, __ATOMIC_RELEASE);
		}
	}
	while (!stopped) {
		if (!produce(c->kind, state, &v))
			continue;
		c->ring[c->seq % RING] = (struct slot){ c->seq, v };
		__atomic_store_n(&c->seq, c->seq + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* The probe module's rings: slot i of ring k tagged i + 1 (see rngprobe.c). */
#define KRING (1ull << 20)
#define KPARAM "/sys/module/rngprobe/parameters/"
static int krings = -1;

static struct slot kslot(int k, uint64_t i)
{
	struct slot s = { 0, 0 };
	off_t off = ((k - 3) * KRING + i % KRING) * sizeof(s);

	if (pread(krings, &s, sizeof(s), off) != sizeof(s) || s.seq != i + 1)
		s.seq = ~0ull;
	else
		s.seq = i;
	return s;
}

static void kstop(void)
{
	int fd = open(KPARAM "stop", O_WRONLY);

	if (fd >= 0 && write(fd, "1", 1) != 1)
		perror(KPARAM "stop");
	if (fd >= 0)
		close(fd);
}

static void dump(FILE *out, int k, uint64_t from, uint64_t n)
{
	fputs("DUMP ", out);
	for (uint64_t i = from; i < from + n; i++) {
		struct slot s = k > 2 ? kslot(k, i) : cons[k].ring[i % RING];
		if (s.seq != i || (k <= 2 && i >= cons[k].seq))
			fputs("----------------", out);
		else
			fprintf(out, "%016llx", (unsigned long long)s.val);
	}
	fputs("\n", out);
}

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "/dev/ttyS1";
	int vdso_only = argc > 2 && !strncmp(argv[2], "vdso", 4);
	unsigned long long from, n;
	pthread_t th;
	char line[128];
	FILE *in, *out;
	int k;

	vdso_call = argc > 2 && !strcmp(argv[2], "vdso-call");
	urnd = vdso_only ? -1 : open("/dev/urandom", O_RDONLY);
	if ((urnd < 0 && !vdso_only) || open_raw_tty(dev, &in, &out)) {
		perror(dev);
		return 1;
	}
	int vdso = vgr_init(&vgr) == 0;
	unsigned long long kphys[2] = { 0, 0 };
	FILE *kp = fopen(KPARAM "seq_phys", "r");

	krings = open("/proc/rngprobe", O_RDONLY);
	if (kp && fscanf(kp, "%llu,%llu", &kphys[0], &kphys[1]) != 2)
		kphys[0] = kphys[1] = 0;
	if (kp)
		fclose(kp);
	/* The counters stay where their physical addresses say. */
	if (mlock(cons, sizeof(cons)) || mlock((void *)&in_call, sizeof(in_call)))
		perror("mlock");
	for (k = 0; k < 3; k++) {
		cons[k].kind = k;
		cons[k].ring = calloc(RING, sizeof(struct slot));
		if (!cons[k].ring || (k == 2 && !vdso) || (vdso_only && k != 2))
			continue;
		pthread_create(&th, NULL, loop, &cons[k]);
	}
	printf("PROBE-READY getrandom=%p urandom=%p vdso=%p vdso-available=%d "
	       "ku32=%#llx ku64=%#llx kernel-available=%d vdso-incall=%p "
	       "phys=%#llx,%#llx,%#llx,%#llx\n",
	       (void *)&cons[0].seq, (void *)&cons[1].seq, (void *)&cons[2].seq, vdso,
	       kphys[0], kphys[1], krings >= 0 && kphys[0], (void *)&in_call,
	       phys_of(&cons[0].seq), phys_of(&cons[1].seq), phys_of(&cons[2].seq),
	       phys_of(&in_call));
	fflush(stdout);
	while (fgets(line, sizeof(line), in)) {
		if (!strncmp(line, "stop", 4)) {
			stopped = 1;
			kstop();
			usleep(20000);	/* let each loop finish its current output */
			fprintf(out, "SEQ %llu %llu %llu\n", (unsigned long long)cons[0].seq,
				(unsigned long long)cons[1].seq, (unsigned long long)cons[2].seq);
		} else if (!strncmp(line, "seq", 3)) {
			fprintf(out, "SEQ %llu %llu %llu\n", (unsigned long long)cons[0].seq,
				(unsigned long long)cons[1].seq, (unsigned long long)cons[2].seq);
		} else if (sscanf(line, "dump %d %llu %llu", &k, &from, &n) == 3 && k >= 0 && k < 5 &&
			   (k < 3 || krings >= 0)) {
			dump(out, k, from, n);
		} else if (!strncmp(line, "uptime", 6)) {
			FILE *u = fopen("/proc/uptime", "r");
			double up = -1;
			if (u && fscanf(u, "%lf", &up) != 1)
				up = -1;
			if (u)
				fclose(u);
			fprintf(out, "UPTIME %.2f\n", up);
		} else {
			fputs("ERR\n", out);
		}
		fflush(out);
	}
	return 0;
}
