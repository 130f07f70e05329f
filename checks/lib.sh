# Shared by every gate in checks/; sourced, never run.
#
# Gate contract (all gates alike):
#   checks/<gate> [TREE BASE HEAD OBJ]   (or CHECK_TREE CHECK_BASE CHECK_HEAD CHECK_OBJ)
#   TREE  a kernel worktree the gate may check out freely (left at HEAD)
#   BASE  commit the series applies to; HEAD  last commit of the series
#   OBJ   O= build dir of the gate's own (never build/obj or build/obj-stock)
# Output: one line per finding "file:line: message", one summary line
# "<gate>: ...", then "PASS <gate>" or "FAIL <gate>: why" followed by how to
# reproduce by hand. Exit 0 on pass, 1 on new findings, 2 if the gate broke.
. "$(dirname "$0")/../scripts/lib.sh"
GATE=${0##*/}
CHECK_TREE=${1:-${CHECK_TREE:-$BUILD/check/linux}}
CHECK_BASE=${2:-${CHECK_BASE:-$BASE_TAG}}
CHECK_HEAD=${3:-${CHECK_HEAD:-HEAD}}
CHECK_OBJ=${4:-${CHECK_OBJ:-$BUILD/check/obj}}
# Debian's python3 first: the pyenv shim lacks ply (spdxcheck.py) and
# codespell_lib (checkpatch's dictionary lookup).
export PATH=/usr/bin:/bin:$PATH
export LC_ALL=C
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
CHECK_BASE=$(git -C "$CHECK_TREE" rev-parse --verify -q "$CHECK_BASE^{commit}") || { echo "FAIL $GATE: bad base commit"; exit 2; }
CHECK_HEAD=$(git -C "$CHECK_TREE" rev-parse --verify -q "$CHECK_HEAD^{commit}") || { echo "FAIL $GATE: bad head commit"; exit 2; }

# Commits of the series, oldest first.
series() { git -C "$CHECK_TREE" rev-list --reverse "$CHECK_BASE..$CHECK_HEAD"; }
# .c files the series adds or modifies (deleted files have nothing to check).
touched_c() { git -C "$CHECK_TREE" diff --name-only --diff-filter=AM "$CHECK_BASE" "$CHECK_HEAD" -- '*.c'; }
exists_at() { git -C "$CHECK_TREE" cat-file -e "$1:$2" 2>/dev/null; }
checkout() { git -C "$CHECK_TREE" checkout -q -f --detach "$1"; }
short() { git -C "$CHECK_TREE" log -1 --format='%h ("%s")' "$1"; }

# One kernel make at a time on this machine: every make takes the build lock.
ccache_env
kmake() {
	flock "$BUILD/.kbuild.lock" make -s -C "$CHECK_TREE" O="$CHECK_OBJ" ARCH=x86_64 \
		${MAKE_CC:+CC="ccache gcc" HOSTCC="ccache gcc"} "$@"
}
# The O= dir must be configured and built once (at BASE) before object
# builds make sense; scripts/build does it with the project's config.
ensure_obj() {
	[ -f "$CHECK_OBJ/vmlinux" ] && return 0
	checkout "$CHECK_BASE"
	say "first build of $CHECK_OBJ at base (slow once, incremental afterwards)"
	"$TOP/scripts/build" "$CHECK_TREE" "$CHECK_OBJ" >&2 || { echo "FAIL $GATE: cannot build base in $CHECK_OBJ"; exit 2; }
}

# Drop noise: NOISE holds "regex<TAB>reason" lines set by each gate.
denoise() {
	local re=() line
	while IFS= read -r line; do [ -n "$line" ] && re+=(-e "${line%%	*}"); done <<<"${NOISE:-}"
	if [ ${#re[@]} -gt 0 ]; then grep -Ev "${re[@]}" || true; else cat; fi
}

# Lines of $2 (patched) not in $1 (base), comparing with line and column
# numbers removed (patches shift lines) and counting duplicates.
new_findings() {
	awk 'function key(s) { sub(/:[0-9]+(:[0-9]+)?(-[0-9]+)?:/, ":", s); return s }
	     NR == FNR { seen[key($0)]++; next }
	     { k = key($0); if (seen[k] > 0) seen[k]--; else print }' "$1" "$2"
}

# Summary, verdict and the way to reproduce; $1 = file of new findings.
verdict() {
	local new=$1 what=$2 n
	n=$(grep -c . "$new" || true)
	cat "$new"
	echo "$GATE: $n new finding(s); $what"
	if [ "$n" = 0 ]; then echo "PASS $GATE"; exit 0; fi
	echo "FAIL $GATE: $n new finding(s)"
	reproduce
	exit 1
}
