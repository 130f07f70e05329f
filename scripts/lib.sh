# shellcheck shell=bash
# Shared helpers of scripts/, checks/ and tests/host/; sourced, never run.
# One file per concern in scripts/lib/, all sourced here; sourcing sets
# variables and functions only (nothing exported: a script that commits
# calls identity_env). Every script prints one line per step and fails
# with a message naming the fix.
# shellcheck source=scripts/lib/paths.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/paths.sh"
# shellcheck source=scripts/lib/out.sh
. "$TOP/scripts/lib/out.sh"
# shellcheck source=scripts/lib/result.sh
. "$TOP/scripts/lib/result.sh"
# shellcheck source=scripts/lib/identity.sh
. "$TOP/scripts/lib/identity.sh"
# shellcheck source=scripts/lib/apt.sh
. "$TOP/scripts/lib/apt.sh"
# shellcheck source=scripts/lib/base.sh
. "$TOP/scripts/lib/base.sh"
# shellcheck source=scripts/lib/series.sh
. "$TOP/scripts/lib/series.sh"
# shellcheck source=scripts/lib/kernels.sh
. "$TOP/scripts/lib/kernels.sh"
# shellcheck source=scripts/lib/gates.sh
. "$TOP/scripts/lib/gates.sh"
# shellcheck source=scripts/lib/kbuild.sh
. "$TOP/scripts/lib/kbuild.sh"
