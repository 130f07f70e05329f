/*
 * The host harness talks to guest programs over a serial port: open it in
 * raw mode (no echo, no line editing) as two stdio streams, since one FILE
 * may not switch between reading and writing.
 */
#include <fcntl.h>
#include <stdio.h>
#include <termios.h>
#include <unistd.h>

static int open_raw_tty(const char *dev, FILE **in, FILE **out)
{
	struct termios t;
	int fd = open(dev, O_RDWR | O_NOCTTY);

	if (fd < 0 || tcgetattr(fd, &t))
		return -1;
	cfmakeraw(&t);
	tcsetattr(fd, TCSANOW, &t);
	*in = fdopen(fd, "r");
	*out = fdopen(dup(fd), "w");
	return *in && *out ? 0 : -1;
}
