#!/bin/sh
# Long reads across a fork (harness/vmtest long-read): see tests/guest/bigread.c.
exec bigread "${1:-64}"
