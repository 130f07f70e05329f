# shellcheck shell=bash
# The shell half of the harness's results (harness/machinery/result.py):
# sourced by scripts/lib.sh, never run.
#
# result STATUS NAME [DETAIL]: print one result for people and record it
# in the phase's result file, which the pipeline runner names in
# VMFORK_RESULTS (one record per line: STATUS<TAB>NAME<TAB>DETAIL).
# STATUS is PASS, FAIL, SKIP or ERROR (the tool could not judge: it
# broke, or its input was unusable).
result() {
	local status=$1 name=$2 detail=${3-}
	case $status in PASS | FAIL | SKIP | ERROR) ;; *) status=ERROR detail="bad status '$1': $detail" ;; esac
	# One line each way: a detail's own lines would read as more results.
	detail=$(printf %s "$detail" | tr '\t\r\n' '   ')
	echo "$status $name${detail:+: $detail}"
	[ -z "${VMFORK_RESULTS-}" ] || printf '%s\t%s\t%s\n' "$status" "$name" "$detail" >>"$VMFORK_RESULTS"
}
# own_results: this script judges the tools it runs by their output, so
# their results are not the phase's: only this shell records, children
# do not inherit the result file.
own_results() { export -n VMFORK_RESULTS 2>/dev/null || :; }
