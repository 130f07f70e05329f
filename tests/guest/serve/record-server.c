/*
 * Record server for the fork harness, on a serial line (default /dev/ttyS1).
 *
 * Proves, together with harness/suites/fork.py, that outputs produced after a VM
 * restore differ between clones with fresh vmgenid GUIDs and repeat between
 * clones with the source's GUID. Each request line gets exactly one numbered
 * record, so at most the record being written at snapshot time is pre-fork.
 * The requests and answers are declared (and parsed) in the harness's
 * harness/machinery/wire.py. "i" uses GRND_INSECURE, the only interface
 * that reads the crng before it is ready; "credit" credits 128 bits
 * (RNDADDENTROPY), which takes a crng that has none to CRNG_EARLY; "state"
 * asks with GRND_NONBLOCK, so it never waits.
 * Pinned to CPU 0 because each CPU has its own crng: same-GUID clones must
 * draw from the same one to show the repetition the control looks for.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include "rawtty.h"
#include "vgetrandom.h"

#define RECLEN 32

static FILE *tty, *in;
static struct vgr vgr;
static void *vstate;
static int urnd = -1;

static const char *fill(unsigned long n, unsigned char *buf)
{
	switch (n % 3) {
	case 0:
		return getrandom(buf, RECLEN, 0) == RECLEN ? "getrandom" : NULL;
	case 1:
		return read(urnd, buf, RECLEN) == RECLEN ? "urandom" : NULL;
	default:
		if (!vstate)
			return "vdso-unavailable";
		return vgr_get(&vgr, vstate, buf, RECLEN) == RECLEN ? "vdso" : NULL;
	}
}

static void record(unsigned long n, int insecure)
{
	unsigned char buf[RECLEN] = { 0 };
	const char *src = insecure ? (getrandom(buf, RECLEN, GRND_INSECURE) == RECLEN ?
				      "insecure" : NULL) : fill(n, buf);

	fprintf(tty, "REC %lu %s ", n, src ? src : "error");
	for (int i = 0; i < RECLEN; i++)
		fprintf(tty, "%02x", buf[i]);
	fputs("\n", tty);
}

/*
 * 128 bits of credit: with nothing trusted at boot, the crng goes from
 * CRNG_EMPTY (each output extracted anew from the pool, RDRAND included)
 * to CRNG_EARLY (one key, advanced by fast key erasure alone) and stays
 * there until interrupts credit 128 more bits, about a minute.
 */
static void credit(void)
{
	struct {
		struct rand_pool_info info;
		unsigned char buf[16];
	} in = { .info = { .entropy_count = 128, .buf_size = 16 } };
	int fd = open("/dev/random", O_WRONLY);

	getrandom(in.buf, sizeof(in.buf), GRND_INSECURE);
	if (fd < 0 || ioctl(fd, RNDADDENTROPY, &in) < 0)
		fprintf(tty, "CREDIT %d\n", errno);
	else
		fputs("CREDIT ok\n", tty);
	if (fd >= 0)
		close(fd);
}

static void run(const char *args)
{
	char name[64], cmd[512], line[512];
	const char *rest;
	FILE *p;
	int st;
	size_t len = strcspn(args, " ");

	/* Only names of shipped scripts and plain words as arguments. */
	if (strspn(args, "abcdefghijklmnopqrstuvwxyz0123456789-_ .") != strlen(args) ||
	    len == 0 || len >= sizeof(name)) {
		fputs("END bad-command\n", tty);
		return;
	}
	memcpy(name, args, len);
	name[len] = 0;
	rest = args + len;
	snprintf(cmd, sizeof(cmd), "/bin/sh /tests/%s.sh%s 2>&1", name, rest);
	p = popen(cmd, "r");
	if (!p) {
		fputs("END popen-failed\n", tty);
		return;
	}
	while (fgets(line, sizeof(line), p))
		fputs(line, tty);
	st = pclose(p);
	fprintf(tty, "END %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128);
}

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "/dev/ttyS1";
	cpu_set_t cpus;
	char line[256];
	unsigned long n = 0;

	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	sched_setaffinity(0, sizeof(cpus), &cpus);
	urnd = open("/dev/urandom", O_RDONLY);
	if (vgr_init(&vgr) == 0)
		vstate = vgr_state(&vgr);
	if (urnd < 0 || open_raw_tty(dev, &in, &tty)) {
		perror(dev);
		return 1;
	}
	setvbuf(tty, NULL, _IOLBF, 0);
	printf("RECORD-SERVER-READY %s vdso=%s\n", dev, vstate ? "yes" : "no");
	fflush(stdout);
	while (fgets(line, sizeof(line), in)) {
		line[strcspn(line, "\r\n")] = 0;
		if (!strncmp(line, "run ", 4))
			run(line + 4);
		else if (!line[0] || !strcmp(line, "r"))
			record(n++, 0);
		else if (!strcmp(line, "i"))
			record(n++, 1);
		else if (!strcmp(line, "credit"))
			credit();
		else if (!strcmp(line, "state"))
			fprintf(tty, "STATE ready=%d\n",
				getrandom(line, 1, GRND_NONBLOCK) == 1);
		else
			fputs("ERR unknown request\n", tty);
		fflush(tty);
	}
	return 0;
}
