"""The harness's machinery: QEMU, consoles, fleets of clones, the serial
protocols, results and the pipeline that runs the phases (harness/vmtest)."""
