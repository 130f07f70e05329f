/*
 * Find the vDSO's getrandom and give each caller its own opaque state.
 * Shared by the guest programs that read vDSO randomness; returns NULL
 * (callers report "vdso unavailable") rather than failing, because the
 * stock and patched kernels must both run the same programs.
 */
#ifndef VGETRANDOM_H
#define VGETRANDOM_H
#include <elf.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

/* Not in the host's uapi headers yet (6.11+); layout per include/uapi/linux/random.h. */
struct vgr_params {
	uint32_t size_of_opaque_state, mmap_prot, mmap_flags, reserved[13];
};
typedef long (*vgr_fn)(void *buf, size_t len, unsigned int flags, void *state, size_t state_len);

struct vgr {
	vgr_fn fn;
	struct vgr_params params;
};

static void *vgr_sym(const char *want)
{
	const Elf64_Ehdr *eh = (const void *)getauxval(AT_SYSINFO_EHDR);
	const Elf64_Phdr *ph;
	const Elf64_Dyn *dyn = NULL;
	const Elf64_Sym *sym = NULL;
	const Elf32_Word *hash = NULL;
	const char *str = NULL;
	uintptr_t base = 0;

	if (!eh)
		return NULL;
	ph = (const void *)((const char *)eh + eh->e_phoff);
	/* Dynamic-section pointers are link-time addresses; base maps them to memory. */
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && !base)
			base = (uintptr_t)eh + ph[i].p_offset - ph[i].p_vaddr;
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_DYNAMIC)
			dyn = (const void *)((const char *)eh + ph[i].p_offset);
	if (!dyn || !base)
		return NULL;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		if (dyn->d_tag == DT_SYMTAB)
			sym = (const void *)(base + dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_STRTAB)
			str = (const void *)(base + dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_HASH)
			hash = (const void *)(base + dyn->d_un.d_ptr);
	}
	if (!sym || !str || !hash)
		return NULL;
	/* DT_HASH's second word is the symbol count: a linear scan is enough here. */
	for (Elf32_Word i = 0; i < hash[1]; i++)
		if (sym[i].st_shndx != SHN_UNDEF && !strcmp(str + sym[i].st_name, want))
			return (void *)(base + sym[i].st_value);
	return NULL;
}

static int vgr_init(struct vgr *v)
{
	v->fn = (vgr_fn)vgr_sym("__vdso_getrandom");
	/* The all-ones state length asks the vDSO for its allocation parameters. */
	if (!v->fn || v->fn(NULL, 0, 0, &v->params, ~0UL) != 0) {
		v->fn = NULL;
		return -1;
	}
	return 0;
}

/* One page per state keeps each state inside one page, as the vDSO requires. */
static void *vgr_state(const struct vgr *v)
{
	void *p = mmap(NULL, (size_t)getpagesize(), v->params.mmap_prot,
		       v->params.mmap_flags, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static long vgr_get(const struct vgr *v, void *state, void *buf, size_t len)
{
	return v->fn(buf, len, 0, state, v->params.size_of_opaque_state);
}
#endif
