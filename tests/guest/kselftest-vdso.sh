#!/bin/sh
# The base kernel's vDSO getrandom() selftests, one result line each:
# vdso_test_getrandom (output, forks, time namespaces) and
# vdso_test_chacha (the vDSO's ChaCha20 against a reference).
for t in vdso_test_getrandom vdso_test_chacha; do
	out=$("/bin/$t" 2>&1)
	rc=$?
	echo "$out" | sed 's/^/# /'
	case $rc in
	0) echo "RESULT PASS kselftest-$t" ;;
	4) echo "RESULT SKIP kselftest-$t: $(echo "$out" | grep -m1 -i skip)" ;;
	*) echo "RESULT FAIL kselftest-$t: exit $rc" ;;
	esac
done
