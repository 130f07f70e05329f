# shellcheck shell=bash disable=SC2034,SC2153 # K_* for the callers; TREE from paths.sh
# The kernels of configs/kernels, the one place they are declared.

KERNELS_FILE=$TOP/configs/kernels
kernel_names() { sed -e '/^#/d' -e '/^$/d' -e 's/\t.*//' "$KERNELS_FILE"; }
# kernel NAME: its entry as K_NAME, K_TREE (absolute; make tree's own
# follows $TREE), K_MADE, K_OBJ (absolute), K_FRAGS, K_ARCH, K_ROLE; dies
# on an unknown name.
kernel() {
	local name tree made obj frags arch role
	while IFS='	' read -r name tree made obj frags arch role; do
		[ "$name" = "$1" ] || continue
		K_NAME=$name K_TREE=$BUILD/$tree K_MADE=$made K_OBJ=$BUILD/$obj K_FRAGS=$frags K_ARCH=$arch K_ROLE=$role
		[ "$made" != mktree ] || K_TREE=$TREE
		return 0
	done < <(sed -e '/^#/d' -e '/^$/d' "$KERNELS_FILE")
	die "no kernel '$1' in configs/kernels (it has: $(kernel_names | tr '\n' ' '))"
}
