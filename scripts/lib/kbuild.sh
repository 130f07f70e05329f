# shellcheck shell=bash
# Kernel builds: ccache, the one-build-at-a-time lock, make out of tree.

ccache_env() {
	export CCACHE_BASEDIR=$BUILD CCACHE_NOHASHDIR=1
	export CCACHE_SLOPPINESS=time_macros,include_file_mtime,include_file_ctime
	command -v ccache >/dev/null && MAKE_CC="CC=ccache gcc HOSTCC=ccache gcc" || MAKE_CC=
}

# The kernel-build lock: one kernel make at a time on this 2-core machine
# (gates, benchmarks and developers share it).
KBUILD_LOCK=$BUILD/.kbuild.lock
# kbuild_lock: hold it until this script exits; its children see
# VMFORK_KBUILD_LOCKED and do not wait for it again.
kbuild_lock() {
	[ -z "${VMFORK_KBUILD_LOCKED-}" ] || return 0
	kbuild_busy
	exec 9>"$KBUILD_LOCK"
	flock 9
	export VMFORK_KBUILD_LOCKED=1
}
# kbuild_busy: say so when another build holds the lock (then wait for it).
kbuild_busy() {
	flock -n "$KBUILD_LOCK" true || say "waiting for the build lock (another kernel build runs)" >&2
}
# kmake ARGS...: one make of the kernel tree $KSRC, out of tree in $KOBJ,
# for $KARCH (default x86_64), through ccache (ccache_env); it takes the
# lock for just this make unless the script holds it. The kernel Makefile
# unexports LC_ALL: LANG too, so that gcc quotes with ASCII whatever the
# locale (the gates compare findings as text).
kmake() {
	local lock=()
	if [ -z "${VMFORK_KBUILD_LOCKED-}" ]; then
		kbuild_busy
		lock=(flock "$KBUILD_LOCK")
	fi
	LANG=C LC_CTYPE=C LC_MESSAGES=C "${lock[@]}" make -s -C "$KSRC" O="$KOBJ" ARCH="${KARCH:-x86_64}" \
		SUBARCH=x86_64 ${MAKE_CC:+CC="ccache gcc" HOSTCC="ccache gcc"} "$@"
}
# frag_paths NAME...: the fragments of configs/ (or paths as given).
frag_paths() {
	local f
	for f in "$@"; do
		case "$f" in */*) ;; *) f=$TOP/configs/$f.config ;; esac
		[ -f "$f" ] || die "config fragment $f does not exist"
		echo "$f"
	done
}
# kconfigure PATH...: $KOBJ's .config as tinyconfig plus these fragments
# (merge_config.sh: a later one overrides an earlier one), then
# olddefconfig; merge_config's output in $KOBJ/merge.log. Returns non-zero
# if a step failed.
kconfigure() {
	mkdir -p "$KOBJ" && kmake tinyconfig >/dev/null &&
		(cd "$KOBJ" && ARCH=${KARCH:-x86_64} SUBARCH=x86_64 "$KSRC/scripts/kconfig/merge_config.sh" \
			-m -O "$KOBJ" .config "$@") >"$KOBJ/merge.log" 2>&1 &&
		kmake olddefconfig >/dev/null
}
# kconfig_missing PATH...: the options these fragments set (the last one
# to set each wins) that $KOBJ/.config does not have as asked, one a line.
kconfig_missing() {
	local f line opt
	local -A kc_want=()
	for f in "$@"; do
		while read -r line; do
			case "$line" in
			CONFIG_*=*) kc_want[${line%%=*}]=$line ;;
			"# CONFIG_"*" is not set") opt=${line#\# }; kc_want[${opt%% *}]=$line ;;
			esac
		done <"$f"
	done
	for opt in "${!kc_want[@]}"; do
		case "${kc_want[$opt]}" in
		CONFIG_*) grep -qx "${kc_want[$opt]}" "$KOBJ/.config" || echo "$opt" ;;
		*) ! grep -q "^$opt=" "$KOBJ/.config" || echo "$opt" ;;
		esac
	done
}
# cpio_of DIR OUT: DIR as an initramfs archive, sorted and owned by root,
# so that the same files make the same bytes.
cpio_of() {
	(cd "$1" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) >"$2"
}

# watch_kmake OBJ LOG LABEL TOTAL ARGS...: the caller's kmake ARGS in the
# background, output in LOG, with a line every 30 s counting the objects
# compiled in OBJ so far (of about TOTAL, if known); returns make's status.
watch_kmake() {
	local obj=$1 log=$2 label=$3 total=$4 pid
	shift 4
	touch "$obj/.build-start"
	kmake "$@" >"$log" 2>&1 &
	pid=$!
	progress "$pid" "$label: %s objects compiled%s" \
		"find '$obj' -name '*.o' -newer '$obj/.build-start' | wc -l" "${total:+ of about $total}"
	wait "$pid"
}
