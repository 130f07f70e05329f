/*
 * Firmware for the vmgenid driver: ADDR points at 160 MiB, ordinary RAM
 * that the kernel command line sets aside (memmap=64K$0xa000000 reserved,
 * or memmap=64K!0xa000000, a memory type the driver does not know) and
 * that a QEMU loader device fills with an ID. Both must be accepted.
 * Used by tests/host/firmware with -acpitable, without -device vmgenid.
 */
DefinitionBlock ("", "SSDT", 2, "VMFORK", "VGENRAM", 1)
{
    Scope (\_SB)
    {
        Device (VGEN)
        {
            Name (_HID, "VMFK0001")
            Name (_CID, "VM_Gen_Counter")
            Name (_DDN, "VM_Gen_Counter")
            Method (ADDR, 0, NotSerialized)
            {
                Return (Package (2) { 0x0a000000, 0 })
            }
        }
    }
}
