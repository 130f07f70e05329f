#!/bin/sh
# The base kernel's vDSO getrandom() selftests: vdso_test_getrandom
# (output, forks, time namespaces) and vdso_test_chacha (the vDSO's
# ChaCha20 against a reference).
exec /tests/kselftest-random.sh vdso_test_getrandom vdso_test_chacha
