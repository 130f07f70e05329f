// SPDX-License-Identifier: GPL-2.0
/*
 * fork_events_wait MS [N]: N processes (default 1; every other one as uid
 * 65534) each poll() their own open file of
 * /proc/sys/kernel/random/fork_events for up to MS ms, while the host forks
 * the VM (restores its snapshot with a new vmgenid). Proves, for the fork
 * harness (tests/guest/fepoll.sh, storm.sh), that a fork wakes every
 * poller, privileged or not, with POLLPRI | POLLERR, and moves the count.
 *
 * Prints "# ready: N pollers on FILE, count C" once every poller has its
 * file open (the host snapshots after it), then one line
 * "fork_events before=B after=A woke=W timedout=T errors=E elapsed=S";
 * exits 0 if every poller woke and the count went up, 1 otherwise.
 * The kernel's own kselftest (tools/testing/selftests/random) checks the
 * file without a fork.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FORK_EVENTS "/proc/sys/kernel/random/fork_events"

/* The count at offset 0; -1 unless the file reads "<decimal>\n". */
static long long read_count(int fd)
{
	char buf[32], *end;
	long long val;
	ssize_t len;

	len = pread(fd, buf, sizeof(buf) - 1, 0);
	if (len <= 1 || buf[len - 1] != '\n')
		return -1;
	buf[len] = '\0';
	errno = 0;
	val = strtoll(buf, &end, 10);
	if (errno || end != buf + len - 1 || val < 0)
		return -1;
	return val;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * One poller, in its own process with its own open file: poll() reports a
 * change once per open file. Tells the parent through @ready once the file
 * is open, so that the count the parent reads next is one every poller
 * sees change. Exits 0 when woken with POLLPRI | POLLERR, 1 on timeout,
 * 2 for anything else, 3 if it could not start. With @draw, once woken it
 * draws 16 bytes with getrandom() at once and prints them as
 * "fork_events_draw HEX": what a woken process gets first, which must
 * differ between clones.
 */
static int poller(int timeout_ms, int unprivileged, int ready, int draw)
{
	unsigned char bytes[16];
	char line[64];
	struct pollfd pfd;
	int fd, ret, i, n;

	if (unprivileged && (setgid(65534) || setuid(65534)))
		return 3;
	fd = open(FORK_EVENTS, O_RDONLY);
	if (fd < 0 || write(ready, "", 1) != 1)
		return 3;
	close(ready);
	pfd = (struct pollfd){ .fd = fd, .events = POLLPRI };
	ret = poll(&pfd, 1, timeout_ms);
	close(fd);
	if (ret == 0)
		return 1;
	if (ret != 1 || (pfd.revents & (POLLPRI | POLLERR)) != (POLLPRI | POLLERR))
		return 2;
	if (draw) {
		if (getrandom(bytes, sizeof(bytes), 0) != sizeof(bytes))
			return 2;
		n = snprintf(line, sizeof(line), "fork_events_draw ");
		for (i = 0; i < (int)sizeof(bytes); i++)
			n += snprintf(line + n, sizeof(line) - n, "%02x", bytes[i]);
		line[n++] = '\n';
		/* One write: the parent and the other pollers share stdout. */
		if (write(STDOUT_FILENO, line, n) != n)
			return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int fd, i, status, pollers = 1, woke = 0, timedout = 0, errors = 0, ready[2];
	long long before, after;
	int timeout_ms;
	double t0;
	char c;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: %s MS [POLLERS]\n", argv[0]);
		return 2;
	}
	timeout_ms = atoi(argv[1]);
	if (argc == 3)
		pollers = atoi(argv[2]);
	if (pollers < 1 || pollers > 1024) {
		fprintf(stderr, "%s: POLLERS takes 1 to 1024\n", argv[0]);
		return 2;
	}
	fd = open(FORK_EVENTS, O_RDONLY);
	if (fd < 0 || pipe(ready)) {
		fprintf(stderr, "%s: %s: %s\n", argv[0], FORK_EVENTS, strerror(errno));
		return 1;
	}
	t0 = now();
	for (i = 0; i < pollers; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			fprintf(stderr, "%s: fork: %s\n", argv[0], strerror(errno));
			return 1;
		}
		if (pid == 0) {
			close(ready[0]);
			_exit(poller(timeout_ms, i % 2, ready[1], i == 0));
		}
	}
	close(ready[1]);
	for (i = 0; i < pollers; i++)
		if (read(ready[0], &c, 1) != 1)
			break;
	close(ready[0]);
	before = read_count(fd);
	printf("# ready: %d pollers on %s, count %lld\n", pollers, FORK_EVENTS, before);
	fflush(stdout);
	for (i = 0; i < pollers; i++) {
		if (wait(&status) < 0 || !WIFEXITED(status))
			errors++;
		else if (WEXITSTATUS(status) == 0)
			woke++;
		else if (WEXITSTATUS(status) == 1)
			timedout++;
		else
			errors++;
	}
	after = read_count(fd);
	printf("fork_events before=%lld after=%lld woke=%d timedout=%d errors=%d elapsed=%.3f\n",
	       before, after, woke, timedout, errors, now() - t0);
	close(fd);
	return !(errors == 0 && woke == pollers && after > before);
}
