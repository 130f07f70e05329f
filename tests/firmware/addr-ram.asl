/*
 * Firmware for the vmgenid driver: ADDR points at 160 MiB, ordinary RAM
 * that a QEMU loader device fills with an ID, used as it is or set aside
 * by the kernel command line (memmap=64K$0xa000000 reserved, %...-1+5
 * unusable, !... persistent memory). Every one must be accepted.
 * Used by harness/vmtest firmware with -acpitable, without -device vmgenid.
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
