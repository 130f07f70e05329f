// SPDX-License-Identifier: GPL-2.0
/*
 * In-kernel RNG consumer for the VM fork benchmarks. Test code, loaded
 * only into QEMU guests, built against both the stock and the patched
 * kernel; it is not part of the series.
 *
 * By default two kthreads, one per CPU, call get_random_u32() and
 * get_random_u64() in a loop and store output i in a ring tagged i + 1,
 * as tests/guest/serve/busy-probe.c does for userspace. The physical addresses
 * of their counters are in the seq_phys parameter so that the host can
 * read them from the paused VM (HMP xp) at the snapshot point; setting
 * the stop parameter halts both; /proc/rngprobe gives the rings to
 * busy-probe (slot i of ring k at offset (k * RING + i) * 16).
 *
 * With bench_ms=N it instead times get_random_u32() and get_random_u64()
 * for N ms each, bench_rounds times in turn, and logs one
 * "RNGBENCH fn=... calls_per_s=... best_per_s=..." line per timing (make
 * bench-rng): calls over the whole time, and the rate of the fastest
 * block of calls, which the host's interruptions do not slow down.
 *
 * Built in (scripts/benchtree, for User-Mode Linux, whose userspace
 * cannot run on hosts with AMX), rngprobe.bench_ms=N on the command line
 * times the same at boot, plus 16 B and 4 KiB reads of /dev/urandom's file
 * operations (getrandom(2)'s path, without the syscall), then powers off;
 * rngprobe.fake_watch=1 makes the RNG watch a generation counter in memory
 * that never changes, as vmclock would (where the tree has the watch).
 *
 * With bigread=1 it only checks one get_random_bytes() longer than a page
 * (check_bigread()) and stays loaded idle: tests/guest/smoke.sh.
 */
#include <linux/anon_inodes.h>
#include <linux/cpumask.h>
#include <linux/err.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/io.h>
#include <linux/kthread.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/proc_fs.h>
#include <linux/random.h>
#include <linux/reboot.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/vmalloc.h>

/* ~0.3 s of get_random_u32() under TCG: the host stops us well before. */
#define RING (1UL << 20)

struct slot {
	u64 tag;	/* output number + 1; 0: never written */
	u64 val;
};

static unsigned int bench_ms;
module_param(bench_ms, uint, 0444);
MODULE_PARM_DESC(bench_ms, "time get_random_u32()/u64() for this many ms instead");

static unsigned int bench_rounds = 1;
module_param(bench_rounds, uint, 0444);
MODULE_PARM_DESC(bench_rounds, "how many times to time each function");

static bool fake_watch;
module_param(fake_watch, bool, 0444);
MODULE_PARM_DESC(fake_watch, "watch a fake VM generation counter while timing");

static bool bigread;
module_param(bigread, bool, 0444);
MODULE_PARM_DESC(bigread, "only check one get_random_bytes() of 3 pages and 17 bytes");

static bool stop;
module_param(stop, bool, 0644);
MODULE_PARM_DESC(stop, "halt the consumers");

static unsigned long seq_phys[2];
module_param_array(seq_phys, ulong, NULL, 0444);
MODULE_PARM_DESC(seq_phys, "physical addresses of the u32 and u64 output counters");

/* kmalloc()ed so that virt_to_phys() is valid for the host to read them. */
static u64 *seqs;
static struct slot *rings;
static struct task_struct *threads[2];
static struct proc_dir_entry *proc;
static u64 bench_sink;

static int consume(void *arg)
{
	unsigned long k = (unsigned long)arg;
	struct slot *ring = rings + k * RING;

	while (!kthread_should_stop()) {
		u64 i = seqs[k], v;

		if (READ_ONCE(stop)) {
			schedule_timeout_interruptible(HZ / 10);
			continue;
		}
		v = k ? get_random_u64() : get_random_u32();
		ring[i % RING].val = v;
		/* The tag last: busy-probe trusts a slot whose tag matches. */
		smp_store_release(&ring[i % RING].tag, i + 1);
		smp_store_release(&seqs[k], i + 1);
		cond_resched();
	}
	return 0;
}

static ssize_t rings_read(struct file *file, char __user *buf, size_t len, loff_t *pos)
{
	return simple_read_from_buffer(buf, len, pos, rings, 2 * RING * sizeof(*rings));
}

static const struct proc_ops rings_ops = {
	.proc_read = rings_read,
	.proc_lseek = default_llseek,
};

/* What bench() times: @len 0 and 8 are get_random_u32()/u64(), else reads. */
static u64 bench_call(struct file *f, size_t len)
{
	static u8 buf[4096];
	loff_t pos = 0;

	if (len == 0)
		return get_random_u32();
	if (len == 8)
		return get_random_u64();
	if (kernel_read(f, buf, len, &pos) != len)
		return 0;
	return buf[0];
}

/*
 * Blocks of @block calls, about 0.1-0.3 ms natively: long against the
 * clock's resolution (UML's reads advance in steps of a few hundred ns),
 * short against the host's interruptions.
 */
static void bench(const char *what, struct file *f, size_t len, int block)
{
	u64 calls = 0, t0 = ktime_get_ns(), t = t0, tb, best = U64_MAX, sink = 0;
	int i;

	do {
		tb = t;
		for (i = 0; i < block; i++)
			sink ^= bench_call(f, len);
		calls += block;
		t = ktime_get_ns();
		best = min(best, t - tb);
		cond_resched();
		t = ktime_get_ns();
	} while (t - t0 < (u64)bench_ms * NSEC_PER_MSEC);
	WRITE_ONCE(bench_sink, sink);
	pr_info("RNGBENCH %s calls_per_s=%llu best_per_s=%llu\n", what,
		div64_u64(calls * NSEC_PER_SEC, t - t0),
		div64_u64(block * NSEC_PER_SEC, max(best, 1ULL)));
}

#if defined(RNGPROBE_WATCH) && !defined(MODULE)
/* A generation counter no hypervisor writes: the check's cost alone. */
static __le64 fake_counter;

static int bench_watch(void)
{
	if (!fake_watch)
		return 0;
	return random_vmfork_watch_counter(&fake_counter);
}

static void bench_unwatch(void)
{
	if (fake_watch)
		random_vmfork_unwatch_counter(&fake_counter);
}
#else
static int bench_watch(void)
{
	return fake_watch ? -EOPNOTSUPP : 0;
}

static void bench_unwatch(void) { }
#endif

#ifdef MODULE
static struct file *bench_file(void)
{
	return NULL;
}
#else
/* Before userspace there is no /dev: the file operations themselves. */
static struct file *bench_file(void)
{
	return anon_inode_getfile("rngprobe", &urandom_fops, NULL, O_RDONLY);
}
#endif

static int run_bench(void)
{
	struct file *f = bench_file();
	unsigned int k;
	int ret;

	if (IS_ERR(f))
		return PTR_ERR(f);
	ret = bench_watch();
	if (ret) {
		pr_err("rngprobe: cannot watch a fake ID: %d\n", ret);
		goto out;
	}
	for (k = 0; k < bench_rounds; k++) {
		bench("fn=get_random_u32", NULL, 0, 8192);
		bench("fn=get_random_u64", NULL, 8, 8192);
		if (f) {
			bench("read=16", f, 16, 1024);
			bench("read=4096", f, 4096, 32);
		}
	}
	bench_unwatch();
out:
	if (f)
		fput(f);
	return ret;
}

/*
 * get_random_bytes() longer than a page goes a page at a time through
 * its own path: it must fill exactly the buffer, and every 32 bytes of
 * it anew. Guards of a fill byte on both sides, and the buffer filled
 * with it first, show a write out of bounds or a chunk left unwritten.
 * A write a few bytes short is seen where each page ends and at the end:
 * a byte there that kept its fill under three fills was not written (a
 * random byte does that once in 2^24).
 */
#define BIG_GUARD 64
#define BIG_LEN (3 * PAGE_SIZE + 17)
#define BIG_FILL 0xa5

static const u8 big_fills[] = { 0x00, 0xff, BIG_FILL };

static bool all_fill(const u8 *p, size_t len)
{
	return !memchr_inv(p, BIG_FILL, len);
}

/* Bit k of *kept: byte k of the 8 at @at kept the fill @f. */
static void mark_kept(const u8 *buf, size_t at, u8 f, unsigned long *kept)
{
	size_t k;

	for (k = 0; k < 8; k++)
		if (buf[at + k] != f)
			*kept &= ~BIT(k);
}

static int check_bigread(void)
{
	/* The 8 bytes before the end of each page and of the buffer. */
	static const size_t ends[] = { PAGE_SIZE - 8, 2 * PAGE_SIZE - 8,
				       3 * PAGE_SIZE - 8, BIG_LEN - 8 };
	unsigned long kept[ARRAY_SIZE(ends)];
	size_t chunks = BIG_LEN / 32, i, j, f;
	u8 *mem = vmalloc(BIG_LEN + 2 * BIG_GUARD), *buf = mem + BIG_GUARD;
	const char *bad = NULL;

	if (!mem)
		return -ENOMEM;
	for (i = 0; i < ARRAY_SIZE(ends); i++)
		kept[i] = 0xff;
	/* The last fill is BIG_FILL: the checks below look at that call. */
	for (f = 0; f < ARRAY_SIZE(big_fills); f++) {
		memset(mem, big_fills[f], BIG_LEN + 2 * BIG_GUARD);
		get_random_bytes(buf, BIG_LEN);
		for (i = 0; i < ARRAY_SIZE(ends); i++)
			mark_kept(buf, ends[i], big_fills[f], &kept[i]);
	}
	for (i = 0; i < ARRAY_SIZE(ends) && !bad; i++)
		if (kept[i])
			bad = "bytes before a page's end or the buffer's were not written";
	if (!bad && (!all_fill(mem, BIG_GUARD) || !all_fill(buf + BIG_LEN, BIG_GUARD)))
		bad = "a guard was written";
	else if (!bad && all_fill(buf + chunks * 32, BIG_LEN % 32))
		bad = "the tail was not written";
	for (i = 0; i < chunks && !bad; i++) {
		if (all_fill(buf + 32 * i, 32))
			bad = "a chunk was not written";
		for (j = i + 1; j < chunks && !bad; j++)
			if (!memcmp(buf + 32 * i, buf + 32 * j, 32))
				bad = "two 32-byte chunks are equal";
	}
	vfree(mem);
	pr_info("rngprobe: bigread %zu bytes: %s\n", (size_t)BIG_LEN, bad ?: "ok");
	return bad ? -EIO : 0;
}

static int __init rngprobe_init(void)
{
	unsigned long k;

	if (bigread)
		return check_bigread();
	if (bench_ms) {
		int ret = run_bench();

		/* Built in, the benchmark is all that boot is for. */
		if (!IS_ENABLED(MODULE))
			kernel_power_off();
		return ret;
	}
	if (!IS_ENABLED(MODULE))
		return 0;
	seqs = kzalloc(2 * sizeof(*seqs), GFP_KERNEL);
	rings = vzalloc(2 * RING * sizeof(*rings));
	if (!seqs || !rings)
		goto nomem;
	proc = proc_create("rngprobe", 0444, NULL, &rings_ops);
	if (!proc)
		goto nomem;
	for (k = 0; k < 2; k++) {
		seq_phys[k] = virt_to_phys(&seqs[k]);
		/* One consumer per CPU, so that each drains its own batches. */
		threads[k] = kthread_create(consume, (void *)k, "rngprobe/%lu", k);
		if (IS_ERR(threads[k]))
			goto fail;
		kthread_bind(threads[k], k % num_online_cpus());
		wake_up_process(threads[k]);
	}
	pr_info("rngprobe: u32 and u64 consumers running\n");
	return 0;
fail:
	while (k--)
		kthread_stop(threads[k]);
	proc_remove(proc);
nomem:
	vfree(rings);
	kfree(seqs);
	return -ENOMEM;
}

static void __exit rngprobe_exit(void)
{
	int k;

	if (bench_ms || bigread)
		return;
	for (k = 0; k < 2; k++)
		kthread_stop(threads[k]);
	proc_remove(proc);
	vfree(rings);
	kfree(seqs);
}

#ifdef MODULE
module_init(rngprobe_init);
#else
/* After UML's console (late_initcall): nothing printed before it is seen. */
late_initcall_sync(rngprobe_init);
#endif
module_exit(rngprobe_exit);
MODULE_DESCRIPTION("vmfork test probe: in-kernel RNG consumer and benchmark");
MODULE_LICENSE("GPL");
