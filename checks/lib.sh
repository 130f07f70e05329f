# shellcheck shell=bash
# Shared by every gate in checks/; sourced, never run.
#
# Gate contract (all gates alike):
#   checks/<gate>/run [TREE BASE HEAD OBJ]   (or CHECK_TREE CHECK_BASE CHECK_HEAD CHECK_OBJ)
#   TREE  a kernel worktree the gate may check out freely (left at HEAD)
#   BASE  commit the series applies to; HEAD  last commit of the series
#   OBJ   O= build dir of the gate's own (never one of configs/kernels)
# Output: one line per finding "file:line: message", one summary line
# "<gate>: ...", then one result (scripts/lib/result.sh): "PASS <gate>", "FAIL
# <gate>: why" or "ERROR <gate>: why" (the gate broke), followed by how to
# reproduce by hand. Exit 0 on pass, 1 on new findings, 2 if the gate broke.
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
GATE=$(basename "$(dirname "$0")")
SAY_AS=$GATE
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
CHECK_BASE=$(git -C "$CHECK_TREE" rev-parse --verify -q "$CHECK_BASE^{commit}") || { result ERROR "$GATE" "bad base commit"; exit 2; }
CHECK_HEAD=$(git -C "$CHECK_TREE" rev-parse --verify -q "$CHECK_HEAD^{commit}") || { result ERROR "$GATE" "bad head commit"; exit 2; }

# Commits of the series, oldest first; b4's empty cover commits (a stack
# of series holds one per series) carry no patch and are left out.
series() { git -C "$CHECK_TREE" rev-list --reverse --invert-grep --grep="$COVER_MARK" "$CHECK_BASE..$CHECK_HEAD"; }
# .c files the series adds or modifies (deleted files have nothing to check).
touched_c() { git -C "$CHECK_TREE" diff --name-only --diff-filter=AM "$CHECK_BASE" "$CHECK_HEAD" -- '*.c'; }
exists_at() { git -C "$CHECK_TREE" cat-file -e "$1:$2" 2>/dev/null; }
# Never check out in the shared tree (build/linux): gates get their own worktree.
checkout() {
	[ "$(cd "$CHECK_TREE" && pwd -P)" != "$(cd "$TREE" && pwd -P)" ] || { result ERROR "$GATE" "refusing to check out in $TREE"; exit 2; }
	git -C "$CHECK_TREE" checkout -q -f --detach "$1"
}
short() { git -C "$CHECK_TREE" log -1 --format='%h ("%s")' "$1"; }

# kmake (scripts/lib.sh) builds in the scratch worktree, out of tree in
# CHECK_OBJ (a gate that switches CHECK_OBJ sets KOBJ with it), each make
# under the kernel-build lock.
ccache_env
KSRC=$CHECK_TREE KOBJ=$CHECK_OBJ
# The O= dir must be configured and built once (at BASE) before object
# builds mean anything. Its config is the patched kernel's .config
# (made by scripts/build from configs/kernels, as shipped) plus configs/kunit.config,
# so that the series' KUnit suite is compiled too, refreshed with olddefconfig.
# The gates' O= dir, configured like the patched kernel and prepared at base: the
# touched objects' gates compile only their directories in it, and the
# bisect gate builds whole kernels in it, incrementally from there.
kernel patched
PROJECT_CONFIG=$K_OBJ/.config
ensure_obj() {
	local cfg=$PROJECT_CONFIG
	[ -f "$CHECK_OBJ/.prepared" ] && cmp -s "$cfg" "$CHECK_OBJ/.config.source" && return 0
	[ -f "$cfg" ] || { result ERROR "$GATE" "no $cfg: run 'make build' first"; exit 2; }
	checkout "$CHECK_BASE"
	say "preparing $CHECK_OBJ at base with the patched kernel's config" >&2
	mkdir -p "$CHECK_OBJ" && cp "$cfg" "$CHECK_OBJ/.config" && cp "$cfg" "$CHECK_OBJ/.config.source"
	(cd "$CHECK_OBJ" && "$CHECK_TREE/scripts/kconfig/merge_config.sh" -m -O "$CHECK_OBJ" .config \
		"$TOP/configs/kunit.config") >"$CHECK_OBJ/merge.log" 2>&1 ||
		{ result ERROR "$GATE" "merging configs/kunit.config failed; see $CHECK_OBJ/merge.log"; exit 2; }
	# What objs_diag configures each commit from (before olddefconfig drops
	# the options that the base does not have yet).
	cp "$CHECK_OBJ/.config" "$CHECK_OBJ/.config.project"
	# shellcheck disable=SC2015 # either step failing is the failure
	kmake olddefconfig >/dev/null &&
		watch_kmake "$CHECK_OBJ" "$CHECK_OBJ/build.log" "preparing the base" "" -j"$(nproc)" prepare >&2 ||
		{ tail -20 "$CHECK_OBJ/build.log"; result ERROR "$GATE" "base does not prepare in $CHECK_OBJ"; exit 2; }
	touch "$CHECK_OBJ/.prepared"
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
	     FILENAME == ARGV[1] { seen[key($0)]++; next }
	     { k = key($0); if (seen[k] > 0) seen[k]--; else print }' "$1" "$2"
}

# Run the gate's findings() at HEAD, and at BASE only if HEAD has any:
# nothing at HEAD means nothing new, so the slower half is skipped.
compare() {
	findings "$CHECK_HEAD" | denoise >"$WORK/head"
	: >"$WORK/base"
	if [ -s "$WORK/head" ]; then
		findings "$CHECK_BASE" | denoise >"$WORK/base"
		checkout "$CHECK_HEAD"
	fi
	new_findings "$WORK/base" "$WORK/head" >"$WORK/new"
	if [ -s "$WORK/broken" ]; then
		sed 's/^/  /' "$WORK/broken"; result ERROR "$GATE" "the tool itself failed (see above)"; reproduce; exit 2
	fi
}
# Objects compiled at HEAD (by every objs_diag call, configs' variants summed).
checked() { awk '{ n += $1 } END { print n + 0 }' "$WORK/checked" 2>/dev/null || echo 0; }
# An object gate on a series that touches no kernel .c file checks nothing:
# that is a failure to say so, not a pass.
need_objs() {
	[ -z "$(touched_objs "$CHECK_HEAD")" ] || return 0
	result FAIL "$GATE" "the series touches no kernel .c file, nothing to compile (GATES= without $GATE for such a series)"
	exit 1
}

# Paths relative to the tree: make prints them absolute or relative to O=.
relpaths() { sed -e "s|$CHECK_TREE/||g" -e "s|^$(realpath -m --relative-to="$CHECK_OBJ" "$CHECK_TREE")/||"; }

# Object gates (sparse, extra-warnings, coccinelle): the objects of the touched .c
# files that exist at commit $1, except userspace programs (tools/,
# scripts/, samples/, usr/): they are not kernel objects, their own
# Makefiles build them.
touched_kernel_c() { touched_c | grep -Ev '^(tools|scripts|samples|usr)/'; }
touched_objs() {
	local f
	for f in $(touched_kernel_c); do
		exists_at "$1" "$f" && objs_of "$1" "$f"
	done | awk '!seen[$0]++'
}
# The objects that compile .c file $2 at commit $1: its own, and those of
# the .c files that #include it. kbuild never compiles lib/vdso/getrandom.c
# by itself; the x86 vDSO's vgetrandom.c includes it.
objs_of() {
	echo "${2%.c}.o"
	includes "$1" | awk -v f="$2" '$2 == f { sub(/\.c$/, ".o", $1); print $1 }'
}
# "includer included" for every #include "X.c" of a touched file's name
# in a .c file at commit $1, the path resolved from the tree's top or the
# includer's directory; one git grep per commit, cached.
includes() {
	local c=$WORK/includes.$1 inc p names
	if [ ! -f "$c" ]; then
		names=$(touched_kernel_c | sed 's|.*/||' | sort -u)
		git -C "$CHECK_TREE" grep -E '^#include "[^"]*\.c"' "$1" -- '*.c' |
		sed -E "s|^$1:([^:]*):#include \"([^\"]*)\".*|\1 \2|" |
		awk -v names="$names" 'BEGIN { split(names, a, "\n"); for (i in a) want[a[i]] = 1 }
			{ n = $2; sub(/.*\//, "", n) } n in want' |
		while read -r inc p; do
			if exists_at "$1" "$p"; then echo "$inc $p"
			else echo "$inc $(realpath -m --relative-to=/ "/${inc%/*}/$p")"; fi
		done >"$c.tmp" && mv "$c.tmp" "$c"
	fi
	cat "$c"
}
# Touched .c files (existing at $1) that none of the built objects $2...
# compiles: a gate that checks objects must not count them as checked.
unbuilt() {
	local rev=$1 f o ok; shift
	for f in $(touched_kernel_c); do
		exists_at "$rev" "$f" || continue
		ok=
		for o in $(objs_of "$rev" "$f"); do
			printf '%s\n' "$@" | grep -qxF "$o" && ok=1
		done
		[ -n "$ok" ] || echo "$f"
	done
}
# Of objects $@, those kbuild built or tried to in objs_diag's directory
# build (a .cmd file, or gcc's dependency file left by a failed compile
# since $WORK/dirs-start): the others are not in this config, and skipped.
# A compile error is a finding, never a skip.
built() {
	local o d
	for o; do
		d=$CHECK_OBJ/$(dirname "$o")/.$(basename "$o")
		[ -f "$d.cmd" ] || [ "$d.d" -nt "$WORK/dirs-start" ] && echo "$o"
	done
}
# Build the objects at $1 quietly, then again with make args $2...: only
# that second run's diagnostics are printed, as file:line[:col]: message
# with paths relative to the tree. Make's chatter, gcc's "In function"
# context, source excerpts and carets carry no file:line: they drop out.
# PRE_DIAG (a gate's function) runs in between, on the object list.
objs_diag() {
	local rev=$1 rc; shift
	checkout "$rev"
	# The project's config as this commit reads it: an option the series
	# adds (its KUnit test) exists only from its patch on, and a .config
	# made at base has dropped it. (The configs gate configures its own.)
	if [ -f "$CHECK_OBJ/.config.project" ]; then
		cp "$CHECK_OBJ/.config.project" "$CHECK_OBJ/.config"
		kmake olddefconfig >/dev/null 2>&1 || echo "make olddefconfig failed at $(short "$rev")" >>"$WORK/broken"
	fi
	mapfile -t objs < <(touched_objs "$rev")
	[ ${#objs[@]} -gt 0 ] || return 0
	# Their directories, not the objects: kbuild compiles a named object
	# even outside the config, a directory only what the config asks for.
	touch "$WORK/dirs-start"
	# shellcheck disable=SC2046 # the objects' directories, one word each
	kmake -k -j"$(nproc)" $(printf '%s\n' "${objs[@]}" | sed 's|[^/]*$||' | sort -u) >"$WORK/plain.log" 2>&1
	mapfile -t objs < <(built "${objs[@]}")
	if [ "$rev" = "$CHECK_HEAD" ]; then
		echo "${#objs[@]}" >>"$WORK/checked"
		unbuilt "$rev" "${objs[@]}" >>"$WORK/unbuilt"
	fi
	[ ${#objs[@]} -gt 0 ] || return 0
	[ -z "${PRE_DIAG:-}" ] || $PRE_DIAG "${objs[@]}"
	kmake -k -j"$(nproc)" "$@" "${objs[@]}" >"$WORK/diag.log" 2>&1
	rc=$?
	relpaths <"$WORK/diag.log" | grep -E '^[^ :]+:[0-9]+(:[0-9]+(-[0-9]+)?)?: ' >"$WORK/diag"
	# A failed make must show why (a compile error); otherwise the tool broke.
	# kbuild turns a checker it finds unusable off with only a warning.
	if grep -q 'C=[12] specified, but' "$WORK/diag.log"; then
		{ echo "make $* failed at $(short "$rev"): the checker is unusable:"; grep 'specified, but' "$WORK/diag.log" | head -1; } >>"$WORK/broken"
	fi
	if [ "$rc" != 0 ] && ! grep -q ': error' "$WORK/diag"; then
		{ echo "make $* ${objs[*]} failed at $(short "$rev"):"; tail -5 "$WORK/diag.log"; } >>"$WORK/broken"
	fi
	cat "$WORK/diag"
}
# An up-to-date object prints nothing: gates that need the compiler (or
# C=1 checkers) to run again remove the objects first. ccache replays the
# warnings of a cached compile, so this stays cheap.
drop_objs() { local o; for o in "$@"; do rm -f "$CHECK_OBJ/$o"; done; }

# Summary, verdict and the way to reproduce; $1 = file of new findings.
verdict() {
	local new=$1 what=$2 n
	# A file no object compiled was not checked: a finding, never a pass.
	# UNBUILT_OK: the configs gate's variants leave files out on purpose.
	if [ -s "$WORK/unbuilt" ] && [ -z "${UNBUILT_OK:-}" ]; then
		sort -u "$WORK/unbuilt" | sed 's|$|: not compiled in this config, by itself or by a file that #includes it (add its options to configs/)|' >>"$new"
	fi
	if [ -f "$WORK/checked" ] && [ "$(checked)" = 0 ]; then
		echo "no touched object compiled in any config, nothing checked" >>"$new"
	fi
	n=$(grep -c . "$new" || true)
	cat "$new"
	echo "$GATE: $n new finding(s); $what"
	if [ "$n" = 0 ]; then result PASS "$GATE"; exit 0; fi
	result FAIL "$GATE" "$n new finding(s)"
	reproduce
	exit 1
}

# No gate passes on nothing: an empty series is a mistake (a wrong base
# or head), never a clean one.
if [ -z "$(series)" ]; then
	result FAIL "$GATE" "empty series ($(git -C "$CHECK_TREE" log -1 --format=%h "$CHECK_BASE")..$(git -C "$CHECK_TREE" log -1 --format=%h "$CHECK_HEAD") has no patch), nothing checked"; exit 1
fi
