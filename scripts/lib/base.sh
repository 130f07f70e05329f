# shellcheck shell=bash
# The base kernel: Debian's linux-source tarball as one reproducible commit.

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
