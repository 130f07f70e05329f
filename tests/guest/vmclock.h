/*
 * struct vmclock_abi (include/uapi/linux/vmclock-abi.h) as the guest
 * programs read it, declared once: the offsets of the fields used, and one
 * seq_count read of them from the mapped page. Loads only, no system call,
 * so that vmclock-spin can poll it without entering the kernel.
 */
#include <endian.h>
#include <stdint.h>

#define VMCLOCK_SEQ 0x0c
#define VMCLOCK_MARKER 0x10
#define VMCLOCK_FLAGS 0x18
#define VMCLOCK_COUNTER 0x68
#define VMCLOCK_HEADER (VMCLOCK_COUNTER + 8)
#define VMCLOCK_FLAG_GEN_COUNTER (1ULL << 8)

struct vmclock_view {
	uint64_t flags, counter, marker;
	uint32_t seq;
};

static inline uint32_t vmclock_ld32(const volatile unsigned char *p, int off)
{
	return le32toh(*(const volatile uint32_t *)(p + off));
}

static inline uint64_t vmclock_ld64(const volatile unsigned char *p, int off)
{
	return le64toh(*(const volatile uint64_t *)(p + off));
}

/* The fields of a page (or of a copy read() gave), whatever its seq_count. */
static inline void vmclock_fields(const volatile unsigned char *p, struct vmclock_view *v)
{
	v->flags = vmclock_ld64(p, VMCLOCK_FLAGS);
	v->counter = vmclock_ld64(p, VMCLOCK_COUNTER);
	v->marker = vmclock_ld64(p, VMCLOCK_MARKER);
	v->seq = vmclock_ld32(p, VMCLOCK_SEQ);
}

/* One seqcount read: 0 and *v, or -1 if the page was mid-update. */
static inline int vmclock_try_read(const volatile unsigned char *p, struct vmclock_view *v)
{
	uint32_t seq = vmclock_ld32(p, VMCLOCK_SEQ);

	if (seq & 1)
		return -1;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	vmclock_fields(p, v);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return vmclock_ld32(p, VMCLOCK_SEQ) == seq ? 0 : -1;
}
