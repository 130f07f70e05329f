# shellcheck shell=sh disable=SC2034 # read by the scripts that source this
# The kernel's messages that the tests look for, in one place: guest
# scripts source this file, harness/machinery/console.py reads it.
# drivers/char/random.c
RESEED="crng reseeded due to virtual machine fork"
EARLY_REKEY="early crng rekeyed due to virtual machine fork"
CRNG_READY="crng init done"
# drivers/virt/vmgenid.c
NOTIFIED_ONLY="forks are acted upon when notified only"
