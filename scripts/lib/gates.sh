# shellcheck shell=bash
# The static gates: a directory each in checks/ (run: the gate; about: what
# it checks, what it compiles, whether it is light, its cost; fixture/: a
# bad series it must fail, fixture/expect: how). Found by listing, never by
# a list kept somewhere else. about's fields:
#   what      one line
#   compiles  no, touched (the touched files: make test's gates phase) or
#             kernels (whole kernels: make check only)
#   light     yes: reads commits only, never the worktree the others check
#             out, so it runs beside them
#   cost      cheapest first

# gate_field GATE KEY: a value of checks/GATE/about.
gate_field() { sed -n "s/^$2: //p" "$TOP/checks/$1/about"; }
# gates [COMPILES...]: the gates that compile so (default: all), cheapest first.
gates() {
	local d g
	for d in "$TOP"/checks/*/about; do
		g=${d%/about} g=${g##*/}
		[ $# = 0 ] || [[ " $* " == *" $(gate_field "$g" compiles) "* ]] || continue
		printf '%s %s\n' "$(gate_field "$g" cost)" "$g"
	done | sort -n | cut -d' ' -f2
}
