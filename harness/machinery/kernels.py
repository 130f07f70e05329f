"""The kernels of configs/kernels, the one place they are declared (the
shell half reads it in scripts/lib/kernels.sh): which tree each is built
from, into which object directory, with which fragments, for which arch.
"""
import dataclasses
import os
from typing import Dict, Tuple

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REGISTRY = os.path.join(TOP, "configs", "kernels")
ROLES = ("patched", "base", "nochecks", "fault", "bench", "-")


@dataclasses.dataclass(frozen=True)
class Kernel:
    name: str
    tree: str  # under build/
    made_by: str  # mktree, worktree REF, variant, benchtree KERNEL, stabletree
    objects: str  # under build/
    fragments: Tuple[str, ...]
    arch: str
    role: str  # patched, base, nochecks, fault, bench, -

    def obj(self, build: str) -> str:
        return os.path.join(build, self.objects)


def parse(text: str) -> Dict[str, Kernel]:
    """The registry's entries by name; ValueError on a malformed line."""
    out: Dict[str, Kernel] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        f = line.split("\t")
        if len(f) != 7 or not all(f) or f[0] in out or f[6] not in ROLES:
            raise ValueError("configs/kernels:%d: want 7 TAB-separated fields, a new name and a role of %s: %r"
                             % (n, "/".join(ROLES), line))
        out[f[0]] = Kernel(f[0], f[1], f[2], f[3], tuple(f[4].split()), f[5], f[6])
    return out


with open(REGISTRY) as _f:
    KERNELS = parse(_f.read())
# The series with a patch of tests/kernels/ on its tip: the revert control
# and the planted faults.
VARIANTS = tuple(k.name for k in KERNELS.values() if k.made_by == "variant")
# make test-stable's: the fixes on the previous base, and that base.
STABLE = tuple(k.name for k in KERNELS.values() if k.made_by == "stabletree")
# Debian's kernels as shipped: their clones repeat, their bugs show.
BASES = tuple(k.name for k in KERNELS.values() if k.role == "base")
# The kernels whose fresh clones must repeat.
REPEATS = tuple(k.name for k in KERNELS.values() if k.role in ("base", "nochecks"))
