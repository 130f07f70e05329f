# shellcheck shell=bash
# Packages: the host's missing ones (need_pkgs), newer suites' unpacked
# privately (papt, punpack).

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
