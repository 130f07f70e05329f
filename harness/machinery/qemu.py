"""QEMU guests for vmfork: command lines, bounded boots, a small QMP client.

Source guests and their clones must share machine type, memory and devices,
so every QEMU command line in the project is built by qemu_argv() here.
"""
import argparse
import json
import os
import re
import signal
import socket
import subprocess
import time
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Set, Tuple

from . import console, kernels
from .result import Result

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Where scripts/lib.sh builds: BUILD is shared with the bash half.
BUILD = os.environ.get("BUILD", os.path.join(TOP, "build"))


class Settings(NamedTuple):
    """A run's settings, from harness/vmtest's options, passed to every
    test: the patched kernel's build (--obj: make test-debug's there), an
    accelerator forced (else probed), whether to keep fork logs."""
    obj: str
    accel: Optional[str] = None
    keep: bool = False

    def obj_of(self, kernel: str) -> str:
        """The build of a kernel of configs/kernels by name; "patched" is
        this run's (--obj)."""
        return self.obj if kernel == "patched" else kernels.KERNELS[kernel].obj(BUILD)


# The kernels the fork tests take by --kernel (configs/kernels): the tip,
# the base, and the variants of the series (tests/kernels/NAME.patch on its
# tip): revert has both checks compiled out and must repeat as stock does;
# skip5, miss5 and lateread are planted faults, judged as the patched
# kernel, which their phases must then fail.
KERNELS = ("patched", "stock") + kernels.VARIANTS
REPEATS = kernels.REPEATS
# make test-stable's (only rebind and early-crng run there).
STABLE_KERNELS = kernels.STABLE
STOCK_OBJ = kernels.KERNELS["stock"].obj(BUILD)
# The one QEMU every guest runs on (scripts/getqemu: 10.0, for vmclock).
QEMU = os.path.join(BUILD, "qemu", "bin", "qemu-system-x86_64")


def qemu_bin() -> str:
    if not os.access(QEMU, os.X_OK):
        raise RuntimeError("no QEMU at %s: run scripts/getqemu (make deps)" % QEMU)
    return QEMU


def default_obj() -> str:
    """--obj's default: VMFORK_OBJ (the debug build, which make test-debug
    sets for every phase), else the patched kernel's build."""
    return os.environ.get("VMFORK_OBJ") or kernels.KERNELS["patched"].obj(BUILD)


def symbol(obj: str, addr: int) -> str:
    """The kernel function holding addr, from obj's System.map (no kallsyms in these kernels)."""
    best: Optional[Tuple[int, str]] = None
    with open(os.path.join(obj, "System.map")) as f:
        for line in f:
            a, kind, sym = line.split()[:3]
            if kind in "tT" and int(a, 16) <= addr and (best is None or int(a, 16) > best[0]):
                best = int(a, 16), sym
    return best[1] if best else "?"


def kernel_config(obj: str) -> Set[str]:
    """obj's .config as a set of lines ("CONFIG_KASAN=y", ...)."""
    with open(os.path.join(obj, ".config")) as f:
        return {l.strip() for l in f}


def kernel_path(obj: str) -> str:
    return os.path.join(obj, "arch/x86/boot/bzImage")


def initrd(obj: str) -> str:
    """The initramfs with obj's own probe module appended, if it has one.

    Concatenated cpio archives are one initramfs to the kernel; modules
    must match the kernel they load into, the rest is shared.
    """
    base = os.path.join(BUILD, "initramfs.cpio")
    kmod = os.path.join(obj, "kmod.cpio")
    if not os.path.exists(kmod) or not os.path.exists(base):
        return base
    out = os.path.join(obj, "initrd.cpio")
    if not os.path.exists(out) or os.path.getmtime(out) < max(
            os.path.getmtime(base), os.path.getmtime(kmod)):
        # Guests may boot side by side (make test): each writes its own copy.
        tmp = "%s.%d.tmp" % (out, os.getpid())
        with open(tmp, "wb") as o:
            for part in (base, kmod):
                with open(part, "rb") as f:
                    o.write(f.read())
        os.replace(tmp, out)
    return out


# Which generation devices a guest has: vmgenid (its GUID), vmclock (its
# page's vm_generation_counter, which the harness writes as the VMM:
# vmclock_page.py), or both. Source and clones must have the same.
DEVICES: Dict[str, Tuple[str, ...]] = {"vmgenid": ("vmgenid",), "vmclock": ("vmclock",),
                                      "both": ("vmgenid", "vmclock")}


def add_devices_arg(p: argparse.ArgumentParser) -> None:
    """--devices, for a fork phase that runs on each setup (see named())."""
    p.add_argument("--devices", choices=sorted(DEVICES), default="vmgenid",
                   help="generation devices (default %(default)s; others add -DEVICES to the "
                   "test names; with vmclock the harness writes its counter as the VMM)")


def named(name: str, devices: str) -> str:
    """A phase's test-name prefix on a device setup: vmgenid's is the plain one."""
    return name if devices == "vmgenid" else name + "-" + devices


# The machine every guest and its clones share: a snapshot restores only
# into the same machine type, memory and vCPUs.
MACHINE, MEMORY_MB, CPUS = "q35", 256, 2


def machine(accel: str, booting: bool) -> List[str]:
    """The machine's options for accel. Under TCG a CPU with RDRAND, so
    that the crng is ready at boot as on real hardware (qemu64 has none
    and needs a minute of interrupts); VMFORK_CPU names another model, to
    measure without the CPU's RNG ("max,-rdrand,-rdseed"), or make
    test-debug's (tests/run-debug). A booting TCG guest runs both vCPUs on
    one host thread: the kernel patches its own text (alternatives, static
    keys) while the other vCPU runs, and under multi-threaded TCG that vCPU
    now and then executes a stale int3 ("Oops: int3" at ~0.8 s, on stock
    and patched kernels alike, about one boot in a hundred). Restored
    clones, which do the RNG work, run on two."""
    if accel != "tcg":
        opts = ["-machine", "%s,accel=%s" % (MACHINE, accel)]
    elif booting:
        opts = ["-machine", MACHINE, "-accel", "tcg,thread=single"]
    else:
        opts = ["-machine", "%s,accel=tcg" % MACHINE]
    if accel == "tcg":
        opts += ["-cpu", os.environ.get("VMFORK_CPU", "max")]
    return opts + ["-m", str(MEMORY_MB), "-smp", str(CPUS)]


def qemu_argv(kernel: str, initrd: str, append: str, accel: str, console_log: str,
              guid: Optional[str] = "auto", chardevs: Sequence[str] = (), qmp: Optional[str] = None,
              incoming: Optional[str] = None, extra: Sequence[str] = (), devices: str = "vmgenid",
              paused: bool = False) -> List[str]:
    """One guest: q35, 256 MiB, 2 vCPUs, serial console to a file.

    chardevs: socket paths for ttyS1.. (guest programs talk over these).
    devices: a key of DEVICES; guid None leaves vmgenid out whatever it says.
    paused: -S, so that the VMM's writes land before the first instruction.
    """
    argv = [qemu_bin()] + machine(accel, booting=not incoming) + [
        "-nodefaults", "-display", "none",
        "-no-reboot", "-kernel", kernel, "-initrd", initrd,
        "-append", "console=ttyS0 panic=-1 " + append,
        "-chardev", "file,id=con,path=" + console_log,
        "-serial", "chardev:con"]
    for i, path in enumerate(chardevs):
        argv += ["-chardev", "socket,id=ch%d,path=%s,server=on,wait=off" % (i, path),
                 "-serial", "chardev:ch%d" % i]
    if guid is not None and "vmgenid" in DEVICES[devices]:
        argv += ["-device", "vmgenid,id=vgid0,guid=" + guid]
    if "vmclock" in DEVICES[devices]:
        argv += ["-device", "vmclock"]
    if paused:
        argv.append("-S")
    if qmp:
        argv += ["-qmp", "unix:%s,server=on,wait=off" % qmp]
    if incoming:
        argv += ["-incoming", incoming]
    return argv + list(extra)


def wait_for(path: str, pattern: str, timeout: float,
             proc: Optional[subprocess.Popen[bytes]] = None) -> Optional[re.Match[str]]:
    """Wait until the file at path matches pattern; return the match or None."""
    rx = re.compile(pattern, re.M)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with open(path, errors="replace") as f:
                m = rx.search(f.read())
            if m:
                return m
        except FileNotFoundError:
            pass
        if proc is not None and proc.poll() is not None:
            return None
        time.sleep(0.1)
    return None


def stop(proc: Optional[subprocess.Popen[bytes]], grace: float = 5) -> None:
    """End a QEMU process, politely first; never waits unbounded."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def uml(obj: str, args: List[str], log: str, timeout: float = 180) -> Tuple[bool, str]:
    """Run the User-Mode Linux kernel obj/linux with args on the last CPU,
    its console into log; (finished in time with exit 0, console text)."""
    # cpu_count() is None where it cannot tell: CPU 0, the one CPU there surely is.
    argv = ["taskset", "-c", str((os.cpu_count() or 1) - 1), os.path.join(obj, "linux")] + args
    with open(log, "w") as f:
        # Its own session: UML forks helpers that a timeout must kill too.
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=f,
                             stderr=subprocess.STDOUT, start_new_session=True)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    with open(log, errors="replace") as f:
        return p.returncode == 0, f.read()


def tail(path: str, n: int = 25) -> str:
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except FileNotFoundError:
        return "(no console log)\n"


def boot(kernel: str, initrd: str, run: str, accel: str, log: str, timeout: float = 120,
         guid: Optional[str] = "auto", extra: Sequence[str] = (), append: str = "",
         devices: str = "vmgenid", setup: "Optional[Callable[[int, QMP], None]]" = None
         ) -> Tuple[bool, List[Result], str]:
    """Boot, run the guest tests named in run, wait for VMFORK-DONE.

    devices: a key of DEVICES. setup: called as setup(pid, qmp) while the
    guest is stopped before its first instruction (the VMM's writes to the
    vmclock page, vmclock_page.py); it runs after that.
    Returns (ok, results, why): results are result.Result, leaves of the
    guest's KTAP (a plan not met or a subtest cut short is a FAIL there);
    why is "" if ok.
    """
    if os.path.exists(log):
        os.unlink(log)
    # In /tmp: a socket path under a deep checkout would pass sun_path's limit.
    qmp = "/tmp/vmfork-boot-%d.qmp" % os.getpid() if setup else None
    argv = qemu_argv(kernel, initrd, ("vmfork.run=" + run + " " + append).strip(), accel, log,
                     guid=guid, extra=extra, devices=devices, paused=bool(setup), qmp=qmp)
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        if setup and qmp:
            q = QMP(qmp, timeout=30)
            try:
                setup(proc.pid, q)
                q.cmd("cont")
            finally:
                q.close()
        done = wait_for(log, "^" + console.DONE, timeout, proc)
        why: Optional[str]
        if done is None:
            why = "guest exited early" if proc.poll() is not None else \
                "no VMFORK-DONE within %ds" % timeout
        else:
            why = None
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                why = "guest did not power off within 15s"
    finally:
        stop(proc)
        if qmp and os.path.exists(qmp):
            os.unlink(qmp)
    text = console.read(log)
    bugs = console.splats(text)
    if bugs:
        why = why or "kernel bug on the console: " + bugs[0]
    results = console.results(text)
    if why:
        err = proc.stderr.read().decode(errors="replace").strip() if proc.stderr else ""
        why += "\n  qemu: " + " ".join(argv) + (("\n  stderr: " + err) if err else "")
    return why is None, results, why or ""


def guest_files(s: Settings, obj: Optional[str] = None,
                initramfs: Optional[str] = None) -> Tuple[str, str, str]:
    """(kernel, initramfs, accelerator) to boot obj's kernel (default: the
    run's); an error naming the make targets if a file is missing."""
    obj = obj or s.obj
    kernel, initramfs = kernel_path(obj), initramfs or initrd(obj)
    for f in (kernel, initramfs):
        if not os.path.exists(f):
            raise FileNotFoundError("%s missing: run 'make build initramfs' first" % f)
    return kernel, initramfs, probe_accel(kernel, initramfs, s.accel)


def probe_accel(kernel: str, initrd: str, forced: Optional[str] = None) -> str:
    """KVM if a guest boots under it within a short bound, else TCG.

    /dev/kvm on this kind of machine can be a nested hypervisor on which
    ordinary guests hang, so its presence alone proves nothing.
    """
    cache = os.path.join(BUILD, "accel")
    if forced:
        return forced
    # The answer holds for this host boot, this /dev/kvm and this QEMU.
    key = probe_key()
    try:
        with open(cache) as f:
            accel, _, had = f.read().strip().partition(" ")
        if had == key and accel in ("kvm", "tcg"):
            return accel
    except FileNotFoundError:
        pass
    accel = "tcg"
    if os.access("/dev/kvm", os.R_OK | os.W_OK):
        log = os.path.join(BUILD, "kvm-probe.log")
        ok, _, _ = boot(kernel, initrd, "", "kvm", log, timeout=20)
        accel = "kvm" if ok else "tcg"
    with open(cache, "w") as f:
        f.write("%s %s\n" % (accel, key))
    return accel


def probe_key() -> str:
    """What the KVM probe's answer depends on: the host's boot, whether
    /dev/kvm is usable, and the QEMU binary."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot_id = f.read().strip()
    except OSError:
        boot_id = "?"
    q = os.stat(QEMU).st_mtime_ns if os.path.exists(QEMU) else 0
    return "%s:%d:%d" % (boot_id, os.access("/dev/kvm", os.R_OK | os.W_OK), q)


class QMP:
    """Minimal QMP client over a unix socket, every call bounded."""

    def __init__(self, path: str, timeout: float = 30) -> None:
        end = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX)
                self.sock.settimeout(timeout)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > end:
                    raise TimeoutError("QMP socket %s never came up" % path)
                time.sleep(0.1)
        self.buf = b""
        self._read()  # greeting
        self.cmd("qmp_capabilities")

    def _read(self) -> Dict[str, Any]:
        while b"\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("QMP connection closed")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    # Any: the "return" is JSON, shaped by each command.
    def cmd(self, name: str, **args: Any) -> Any:
        msg: Dict[str, Any] = {"execute": name}
        if args:
            msg["arguments"] = args
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            r = self._read()
            if "return" in r:
                return r["return"]
            if "error" in r:
                raise RuntimeError("QMP %s: %s" % (name, r["error"].get("desc")))

    def close(self) -> None:
        self.sock.close()
