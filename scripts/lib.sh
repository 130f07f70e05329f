# shellcheck shell=bash
# Shared helpers for the scripts in this directory; sourced, never run.
# Every script prints one line per step and fails with a message naming the fix.

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
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
# shellcheck disable=SC2034 # for the scripts that source this
B4_PY=$BUILD/tools/root/usr/lib/python3/dist-packages
PROJECT_NAME=vmfork
PROJECT_EMAIL=vmfork@example.org
T0=${T0:-$(date +%s)}
# The base kernel's tree and build (scripts/build-stock).
# shellcheck disable=SC2034 # for the scripts that source this
STOCK_TREE=$BUILD/stock
# shellcheck disable=SC2034 # for the scripts that source this
STOCK_OBJ=$BUILD/obj-stock
# make test-stable: the fixes on the previous base (scripts/stabletree),
# and that base as it is; their builds (scripts/build-stable).
# shellcheck disable=SC2034 # for the scripts that source this
STABLE_TREE=$BUILD/stable STABLE_STOCK=$BUILD/stable-stock
# shellcheck disable=SC2034 # for the scripts that source this
STABLE_OBJ=$BUILD/obj-stable STABLE_STOCK_OBJ=$BUILD/obj-stable-stock

# shellcheck source=scripts/result.sh
. "$TOP/scripts/result.sh"
say() { printf '[%s %4ss] %s\n' "${0##*/}" "$(( $(date +%s) - T0 ))" "$*"; }
die() { printf '%s: error: %s\n' "${0##*/}" "$*" >&2; exit 1; }

# import_tarball TARBALL DIR TAG SRCPKG VERSION: a Debian linux-source
# tarball unpacked into DIR, a new git repository holding it as one commit
# on branch base, tagged TAG. A fixed identity, date and message (no
# checkout path in it) make that commit identical on every machine and in
# every clone, so that the base-commit: b4 records resolves for others too.
import_tarball() {
	local tmp=$2.tmp when
	rm -rf "$tmp"
	mkdir -p "$tmp"
	say "unpacking $1 ($5)"
	tar -xJf "$1" -C "$tmp" --strip-components=1
	# Debian's .gitignore ends by ignoring everything at the top level (its
	# packaging repo holds only debian/); drop that block so git sees the tree.
	sed -i '/^# Debian packaging: ignore everything/,$d' "$tmp/.gitignore"
	sed -i -e :a -e '/^#*\n*$/{$d;N;ba' -e '}' "$tmp/.gitignore"
	say "committing the base (about a minute)"
	git -C "$tmp" init -q -b base
	git -C "$tmp" add -f -A .
	when="@$(stat -c %Y "$1") +0000"
	GIT_AUTHOR_NAME=$PROJECT_NAME GIT_AUTHOR_EMAIL=$PROJECT_EMAIL \
	GIT_COMMITTER_NAME=$PROJECT_NAME GIT_COMMITTER_EMAIL=$PROJECT_EMAIL \
	GIT_AUTHOR_DATE=$when GIT_COMMITTER_DATE=$when \
		git -C "$tmp" commit -q -m "Import Debian $4 $5" -m \
"Unpacked from ${1##*/} as shipped by the Debian package
$4 $5. The block at the end of .gitignore that ignores
every top-level path (Debian's packaging repository tracks only
debian/) is dropped so that git sees the tree."
	git -C "$tmp" tag "$3"
	mv "$tmp" "$2"
	say "base $(git -C "$2" rev-parse --short "$3") tree $(git -C "$2" rev-parse --short "$3^{tree}")"
}

# Debian version of the base kernel source package.
srcpkg_version() { echo "$BASE_VERSION"; }

# papt APT-COMMAND ARGS...: apt-get/apt-cache on a configuration of our own
# under build/apt (Debian's newer suites), so that nothing the host installs
# or upgrades changes: its sources, lists and cache are not read or written.
APT_DIR=$BUILD/apt
papt() {
	local cmd=$1
	shift
	"$cmd" -o Dir::Etc::sourcelist="$APT_DIR/sources.list" -o Dir::Etc::sourceparts=- \
		-o Dir::State::Lists="$APT_DIR/lists" -o Dir::Cache="$APT_DIR/cache" \
		-o APT::Sandbox::User=root "$@"
}

# punpack DIR PKG...: packages of Debian's newer suites, downloaded through
# papt into DIR/debs and unpacked into DIR/root, never installed (DIR is
# made anew, with DIR/bin for the caller's wrappers). The lists are read
# again once when a version is not in them; false if it is still missing.
punpack() {
	local dir=$1 d
	shift
	[ -s "$APT_DIR/sources.list" ] || "$TOP/scripts/getbase" --lists >/dev/null || die "no private package lists"
	rm -rf "$dir" && mkdir -p "$dir/debs" "$dir/bin"
	(cd "$dir/debs" && papt apt-get -q download "$@") >"$dir/download.log" 2>&1 || {
		papt apt-get -q update >/dev/null 2>&1
		(cd "$dir/debs" && papt apt-get -q download "$@") >"$dir/download.log" 2>&1
	} || return 1
	for d in "$dir"/debs/*.deb; do dpkg-deb -x "$d" "$dir/root"; done
}

# Authorship comes from whoever runs the tools; without a git identity,
# the project's own identity is used (never an invented person). b4 reads
# user.name/user.email from git config, hence GIT_CONFIG_* as well.
use_identity() {
	export GIT_AUTHOR_NAME=$1 GIT_AUTHOR_EMAIL=$2 GIT_COMMITTER_NAME=$1 GIT_COMMITTER_EMAIL=$2
	export GIT_CONFIG_COUNT=2 GIT_CONFIG_KEY_0=user.name GIT_CONFIG_VALUE_0=$1 \
		GIT_CONFIG_KEY_1=user.email GIT_CONFIG_VALUE_1=$2
}
identity_env() {
	if ! git config user.email >/dev/null 2>&1 || ! git config user.name >/dev/null 2>&1; then
		use_identity "$PROJECT_NAME" "$PROJECT_EMAIL"
	fi
}
identity_env

# placeholder "Name <addr>": true for an identity no person answers at:
# the project's own, the example domains and reserved names of RFC 2606
# and 6761, noreply addresses. The kernel takes no anonymous contribution
# (Documentation/process/submitting-patches.rst, the DCO).
placeholder() {
	local a=${1,,}
	a=${a##*<} a=${a%%>*}
	case $a in
	"$PROJECT_EMAIL" | *@example.* | *.example.com | *.example.net | *.example.org | \
	*.example | *.invalid | *.test | *.localhost | *@localhost | *noreply* | *no-reply*) return 0 ;;
	esac
	[[ $a != *@* ]]
}

# need_pkgs PKG...: install the Debian packages of the list that are
# missing (host apt: bookworm's own packages, never a newer suite's).
need_pkgs() {
	local p missing='' none='' cmd
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
			missing="$missing $p"
	done
	if [ -z "$missing" ]; then
		say "all $# packages present"
		return 0
	fi
	cmd="apt-get install -y --no-install-recommends$missing"
	[ "$(id -u)" = 0 ] || die "missing packages:$missing; run as root: apt-get update && $cmd"
	say "installing:$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null || die "apt-get update failed; check /etc/apt/sources.list"
	# A name apt has no candidate for would only fail the install as a
	# whole: name it, and what to do.
	for p in $missing; do
		apt-cache policy "$p" 2>/dev/null | grep -q 'Candidate: [^(]' || none="$none $p"
	done
	[ -z "$none" ] || die "cannot be installed, not in the apt sources:$none (check the name, or add its source)"
	$cmd >"${TMPDIR:-/tmp}/vmfork-apt.log" 2>&1 ||
		die "'$cmd' failed; see ${TMPDIR:-/tmp}/vmfork-apt.log"
	say "installed:$missing"
}

need_tree() {
	[ -d "$TREE/.git" ] || die "no kernel tree at $TREE: run 'make tree' first"
}
need_b4() {
	[ -x "$B4" ] || "$TOP/scripts/gettools" >&2 || die "no b4 0.14 in ${B4%/*}: scripts/gettools failed"
}

# b4's empty cover commit of series NAME (default: the top one), which
# holds its cover letter and b4's tracking data.
COVER_MARK='^--- b4-submit-tracking ---$'
cover_commit() {
	git -C "$TREE" log --format='%H' --grep="$COVER_MARK" -1 "$BASE_TAG..b4/${1:-${BRANCH#b4/}}" 2>/dev/null
}
# cover_field TREE COMMIT KEY: a value (change-id, revision...) of the b4
# tracking data in cover commit COMMIT; series_field NAME KEY: in series NAME's.
cover_field() {
	git -C "$1" log -1 --format=%B "$2" | sed '1,/^--- b4-submit-tracking ---$/d' | grep -v '^#' |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["series"][sys.argv[1]])' "$3"
}
series_field() { cover_field "$TREE" "$(cover_commit "$1")" "$2"; }
# stand_in_tags: b4 expands a series' prerequisite-change-id from the tag
# a real send leaves (sent/CHANGE-ID-vN), else from lore, out of reach
# here. For each series without one, such a tag on its branch (patch-ids
# do not depend on authorship), named in $STAND_IN_TAGS for drop_stand_ins.
stand_in_tags() {
	local s c cid rev tag
	STAND_IN_TAGS=
	for s in $(series_names); do
		c=$(cover_commit "$s")
		cid=$(cover_field "$TREE" "$c" change-id) rev=$(cover_field "$TREE" "$c" revision)
		tag=sent/$cid-v$rev
		git -C "$TREE" rev-parse -q --verify "refs/tags/$tag" >/dev/null && continue
		git -C "$TREE" tag -a "$tag" "b4/$s" -m "$s v$rev (stand-in: not sent)" \
			-m "base-commit: $(git -C "$TREE" rev-parse "$c^")
change-id: $cid" && STAND_IN_TAGS="$STAND_IN_TAGS $tag"
	done
}
drop_stand_ins() {
	local t
	for t in ${STAND_IN_TAGS:-}; do git -C "$TREE" tag -d "$t" >/dev/null 2>&1 || :; done
	STAND_IN_TAGS=
}

# cover_part text|tracking: of a cover commit's message (stdin), the
# cover letter or b4's tracking data (from its marker on).
cover_part() {
	if [ "$1" = text ]; then sed '/^--- b4-submit-tracking ---$/,$d'; else sed -n '/^--- b4-submit-tracking ---$/,$p'; fi |
		trim_blank
}
# copies_worktree DIR PREFIX: b4 rewrites the branch it edits a cover on
# (auto-to-cc, reroll) or sends from, which would unstack the series above:
# callers work on copies PREFIX/NAME of b4/NAME, checked out in DIR, a
# throwaway worktree at the base that drop_copies removes with the copies
# and any stand-in tags (on exit too).
copies_worktree() {
	COPIES_WT=$1 COPIES_PREFIX=$2
	drop_copies
	trap drop_copies EXIT
	git -C "$TREE" worktree add -q --detach "$1" "$BASE_TAG" || die "cannot add worktree $1"
	cp "$TOP/.b4-config" "$1/.b4-config"
}
drop_copies() {
	local s
	# set -e: a missing worktree, branch or tag is not an error here.
	git -C "$TREE" worktree remove --force "$COPIES_WT" 2>/dev/null || :
	for s in $(series_names); do git -C "$TREE" branch -q -D "$COPIES_PREFIX/$s" 2>/dev/null || :; done
	drop_stand_ins
}

# The commits of the stack that carry patches, oldest first: b4's cover
# commits left out.
stack_commits() {
	git -C "$TREE" log --reverse --format=%H --invert-grep --grep="$COVER_MARK" "$BASE_TAG..$BRANCH"
}

# One line per commit, "patch-id:message-hash", so a series can be compared
# across trees (patch-id) and an edit to a commit message alone is still
# seen as work to export (message hash, with the author).
series_patch_ids() {
	[ -n "$(cover_commit)" ] || die "$TREE: branch $BRANCH is not b4-enrolled (no cover commit)"
	git -C "$TREE" log --reverse --format=%H --invert-grep --grep="$COVER_MARK" "${1:-$BASE_TAG}..$BRANCH" | while read -r h; do
		id=$(git -C "$TREE" show "$h" | git patch-id --stable | cut -d' ' -f1)
		msg=$(git -C "$TREE" log -1 --format='%an <%ae>%n%B' "$h" | sha1sum | cut -c1-12)
		# An empty commit has no patch-id, but it is still work to export.
		echo "${id:-empty-$msg}:$msg"
	done
}

# The stack in build/linux, one line per series ("NAME cover-hash", or
# "NAME unstacked" when its branch is missing or not on the one below) and
# per commit ("patch-id:message-hash"): order, cover letters, patches and
# messages, so that work never exported shows.
stack_state() {
	local name c prev=$BASE_TAG
	for name in $(series_names); do
		c=$(cover_commit "$name")
		if [ -z "$c" ] || [ "$(git -C "$TREE" rev-parse "$c^")" != "$(git -C "$TREE" rev-parse "$prev")" ]; then
			echo "$name unstacked"
			return 0
		fi
		echo "$name $(git -C "$TREE" log -1 --format=%B "$c" | trim_blank | sha1sum | cut -c1-12)"
		BRANCH=b4/$name series_patch_ids "$c"
		prev=b4/$name
	done
}
# Trailing blank lines off (stdin to stdout).
trim_blank() { sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'; }

ccache_env() {
	export CCACHE_BASEDIR=$BUILD CCACHE_NOHASHDIR=1
	export CCACHE_SLOPPINESS=time_macros,include_file_mtime,include_file_ctime
	command -v ccache >/dev/null && MAKE_CC="CC=ccache gcc HOSTCC=ccache gcc" || MAKE_CC=
}


# progress PID FORMAT CMD [ARG]: while PID runs, print FORMAT (printf, with
# CMD's output and ARG) every 25 s, so that no long step is silent for 30 s
# (and make test's own line for a silent phase is not needed).
progress() {
	local pid=$1 fmt=$2 cmd=$3 arg=${4:-} t=0
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		t=$((t + 1))
		if [ $((t % 25)) = 0 ] && kill -0 "$pid" 2>/dev/null; then
			# shellcheck disable=SC2059 # fmt is the caller's printf format
			say "$(printf "$fmt" "$(eval "$cmd")" "$arg")"
		fi
	done
	return 0
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
