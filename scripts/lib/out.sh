# shellcheck shell=bash
# What a script says: progress lines, its fatal error, its results
# (result.sh), and a line every 25 s while a long step runs.

# SAY_AS: the name lines carry, where the script's own is not telling (checks/GATE/run).
say() { printf '[%s %4ss] %s\n' "${SAY_AS:-${0##*/}}" "$(( $(date +%s) - T0 ))" "$*"; }
die() { printf '%s: error: %s\n' "${0##*/}" "$*" >&2; exit 1; }

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
