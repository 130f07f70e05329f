/*
 * Malformed firmware for the vmgenid driver: the device has no ADDR method.
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

        }
    }
}
