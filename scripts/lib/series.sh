# shellcheck shell=bash
# The stack of series in build/linux: b4's cover commits, their tracking
# data, the commits that carry patches, and copies b4 may rewrite.

need_tree() {
	[ -d "$TREE/.git" ] || die "no kernel tree at $TREE: run 'make tree' first"
}
need_b4() {
	[ -x "$B4" ] || "$TOP/scripts/gettools" >&2 || die "no b4 0.14 in ${B4%/*}: scripts/gettools failed"
}

# b4's empty cover commit of series NAME (default: the top one), which
# holds its cover letter and b4's tracking data.
# b4's line between a cover letter and its tracking data (b4-marker: the
# one place it is written, scripts/covermsg reads it too), and a regex of it.
B4_MARKER=$(<"$TOP/scripts/lib/b4-marker")
COVER_MARK="^$B4_MARKER\$"
cover_commit() {
	git -C "$TREE" log --format='%H' --grep="$COVER_MARK" -1 "$BASE_TAG..b4/${1:-${BRANCH#b4/}}" 2>/dev/null
}
# cover_field TREE COMMIT KEY: a value (change-id, revision...) of the b4
# tracking data in cover commit COMMIT; series_field NAME KEY: in series NAME's.
cover_field() {
	git -C "$1" log -1 --format=%B "$2" | sed "1,/$COVER_MARK/d" | grep -v '^#' |
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
	if [ "$1" = text ]; then sed "/$COVER_MARK/,\$d"; else sed -n "/$COVER_MARK/,\$p"; fi |
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
