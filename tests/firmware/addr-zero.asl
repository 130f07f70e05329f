/*
 * Malformed firmware for the vmgenid driver: ADDR points at address 0.
 * Used by harness/vmtest firmware with -acpitable, without -device vmgenid.
 */
DefinitionBlock ("", "SSDT", 2, "VMFORK", "VGENBAD", 1)
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
                Return (Package (2) { 0, 0 })
            }
        }
    }
}
