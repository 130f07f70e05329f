# shellcheck shell=bash disable=SC2034 # variables for the scripts that source this
# Where everything is: the checkout, build/, the kernel trees, the series
# and the base they apply to. No side effect but variables.

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-$TOP/build}
TREE=${TREE:-$BUILD/linux}
PATCHES=${PATCHES:-$TOP/patches}
# The base: Debian's linux-source-X.Y at the version patches/base-version
# names, fetched by scripts/getbase into build/base through a private apt.
# (A PATCHES directory without one is on the project's base.)
BASE_VERSION=${BASE_VERSION:-$(cat "$PATCHES/base-version" "$TOP/patches/base-version" 2>/dev/null | head -1)}
SRCPKG=linux-source-$(echo "$BASE_VERSION" | cut -d. -f1,2)
TARBALL=${TARBALL:-$BUILD/base/$SRCPKG-$BASE_VERSION.tar.xz}
BASE_TAG=vmfork-base
# The work is sent as a stack of series: patches/series names them in the
# order they apply. Each is a directory patches/NAME (its patches,
# cover-letter.txt, b4-tracking) and a b4 branch b4/NAME in build/linux,
# forked from the tip of the one before; BRANCH, the top, holds them all.
series_names() { sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$PATCHES/series" 2>/dev/null; }
BRANCH=b4/$(series_names | tail -1)
# b4 0.14, unpacked by scripts/gettools (series dependencies).
B4=$BUILD/tools/bin/b4
B4_PY=$BUILD/tools/root/usr/lib/python3/dist-packages
PROJECT_NAME=vmfork
PROJECT_EMAIL=vmfork@example.org
T0=${T0:-$(date +%s)}
# The kernels' trees and builds: configs/kernels (scripts/lib/kernels.sh).
