/*
 * One string written to DIR/FILE (a driver's bind or unbind, say), as the
 * guest programs that bind and unbind devices do it: 0, or -1 with errno.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static inline int write_to(const char *dir, const char *file, const char *s)
{
	char path[256];
	int fd, ret;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	ret = write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : -1;
	close(fd);
	return ret;
}
