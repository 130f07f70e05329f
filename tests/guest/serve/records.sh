#!/bin/sh
# Fork-harness mode (vmfork.serve=records): start the record server on ttyS1
# and never return, so init never powers off; the host quits QEMU itself.
record-server /dev/ttyS1 &
while :; do sleep 3600; done
