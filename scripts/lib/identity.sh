# shellcheck shell=bash
# Who the tools act as: the git identity of whoever runs them, else the
# project's (identity_env, called by the scripts that commit, never on source).

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
