"""The test modules of harness/vmtest: one per QEMU test or benchmark."""
