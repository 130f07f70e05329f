#!/bin/sh
# Long reads across a fork (tests/fork/longread): see tests/guest/bigread.c.
exec bigread "${1:-64}"
