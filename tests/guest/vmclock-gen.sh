#!/bin/sh
# For the fork harness (Guest.run): the vmclock page's generation counter
# as this guest reads it (tests/guest/vmclock-gen.c), "VMCLOCK flags=..."
# as root, mapped or with "read" through read(); with "nobody", what uid
# 65534 may do with /dev/vmclock0.
case "${1:-}" in
nobody) exec vmclock-gen --nobody ;;
read) exec vmclock-gen --read ;;
*) exec vmclock-gen ;;
esac
