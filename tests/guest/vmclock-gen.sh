#!/bin/sh
# For the fork harness (Guest.run): the vmclock page's generation counter
# as this guest reads it (tests/guest/vmclock-gen.c), "VMCLOCK flags=..."
# as root; with "nobody", what uid 65534 may do with /dev/vmclock0.
if [ "${1:-}" = nobody ]; then
	exec vmclock-gen --nobody
fi
exec vmclock-gen
