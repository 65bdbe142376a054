package kernels

import (
	"fmt"
	"math/bits"
	"strings"
)

// The memory kernels (MIPP §IV-B) and their intensity variants (MIPP Figs. 6-8).
//
// The streaming kernels (DRAMRead, DRAMCopy, L2Read, Coalescing, AccessSize) walk a
// buffer with every thread of the grid: in each loop step a thread makes Unroll accesses,
// one "row" apart (a row is what the whole grid touches with one access each), all loads
// of a step before any store, so that Unroll accesses per thread are in flight. A pass
// is steps × Unroll rows, the whole buffer; the kernel makes Iters passes (outer loop
// "passes", inner loop "steps"). Bytes are exact: the buffer is a whole number of steps.
// Loaded words are xor-ed into one register that is compared with a magic parameter at
// the end (the store under that compare never happens), so no load is dead.
//
// The on-chip kernels (SharedRead, BankConflicts, ConstRead) run one loop of Iters
// iterations of Unroll accesses.
//
// Each access is attributed to the level that serves it: a DRAM kernel's bytes also pass
// through L2, but are counted under DRAM only.

const (
	gib = 1 << 30
	mib = 1 << 20
)

// streamSpec describes one streaming kernel.
type streamSpec struct {
	name, group string
	level       MemLevel
	elem        int    // bytes per access: 1, 2, 4, 8, 16
	copy        bool   // load then store to a second buffer; else load and xor
	cache       string // "" or ".cg"
	// coalesce > 0: threads per transaction (the Coalescing layout); 0: linear layout.
	coalesce int
	bytes    int64   // target buffer size
	rate     float64 // expected bytes per second of Bytes[level], for sizing
	notes    []string
	variant  map[string]float64
}

// DRAMRead generates a grid-stride read of a buffer much larger than L2 (Opts.Bytes,
// default 1 GiB) with 16-byte vector loads (ld.global.v4.u32). Bytes[DRAM] = the bytes
// read. Reads Opts.Device, Threads, Blocks, Iters (passes), Unroll (default 4), Bytes.
func DRAMRead(o Opts) (Descriptor, error) {
	return stream(o, streamSpec{name: "dram.read", group: "memory", level: DRAM, elem: 16,
		bytes: gib, notes: []string{"Grid-stride ld.global.v4.u32 over a buffer much larger than L2."}})
}

// DRAMCopy generates a grid-stride copy between two buffers (Opts.Bytes each, default
// 1 GiB) with 16-byte vector loads and stores. Bytes[DRAM] = bytes read + written.
func DRAMCopy(o Opts) (Descriptor, error) {
	return stream(o, streamSpec{name: "dram.copy", group: "memory", level: DRAM, elem: 16, copy: true,
		bytes: gib, notes: []string{"Grid-stride ld/st.global.v4.u32; full 32-byte sectors are written, so no read-for-ownership."}})
}

// L2Read generates repeated grid-stride reads of a working set that fits in L2 (Opts.Bytes,
// default 8 MiB rounded to whole rows), with ld.global.cg.v4.u32 (cached in L2, not L1).
// Bytes[L2] = bytes read. Unroll defaults to 2.
func L2Read(o Opts) (Descriptor, error) {
	return stream(o, streamSpec{name: "l2.read", group: "memory", level: L2, elem: 16, cache: ".cg",
		bytes: 8 * mib, notes: []string{
			"ld.global.cg.v4.u32 (L2 only) over a working set far smaller than L2, read again every pass.",
			"The working set comes from DRAM once per launch at most (the executor zeroes it just before); not counted."}})
}

// Coalescing generates the coalescing variant (MIPP Fig. 6): 4-byte loads (ld.global.cg.u32)
// where threadsPerTransaction (1, 2, 4, 8, 16 or 32) consecutive lanes of a warp read
// consecutive words and the groups of lanes lie 128 bytes apart, as MIPP's "1/16
// coalescence" is 16 groups of two threads; 1 is no coalescing (every lane its own
// 128-byte line), 32 full. Bytes[DRAM] counts the DRAM fetch units transferred
// (DRAMFetchBytes: 64 bytes on sm_90, 32-byte sectors before), Requested the 4 bytes per
// load that the threads use: Bytes/Requested on sm_90 is 16 for 1 lane per group, 8 for 2,
// 4 for 4, 2 for 8 and 1 from 16 on (before sm_90: 8, 4, 2, then 1 from 8 on).
func Coalescing(threadsPerTransaction int, o Opts) (Descriptor, error) {
	k := threadsPerTransaction
	if k < 1 || k > 32 || k&(k-1) != 0 {
		return Descriptor{}, fmt.Errorf("kernels: coalescing %d threads per transaction: want 1, 2, 4, 8, 16 or 32", k)
	}
	return stream(o, streamSpec{name: "coalesce." + coalesceName(k), group: "coalescing", level: DRAM, elem: 4,
		cache: ".cg", coalesce: k, bytes: gib, variant: map[string]float64{"coalescing": float64(k)},
		notes: []string{
			fmt.Sprintf("%d lanes per group read consecutive words; groups 128 B apart (MIPP coalescence %s).", k, coalesceName(k)),
			"Bytes[dram] counts DRAM fetch units (64 bytes on sm_90, measured with Nsight Compute on an H200; 32-byte sectors before, not verified)."}})
}

// DRAMFetchBytes is the unit in which DRAM moves data for the coalescing variants on a GPU
// of compute capability sm/10: 64 bytes from sm_90 on (Nsight Compute on an H200: a group of
// lanes whose words fill one 32-byte sector moves 64 bytes of DRAM, 2.00 times the sectors,
// results/nvidia-h200/2026-11-24-micro-verified), 32 (the L2 sector) before, not verified here.
func DRAMFetchBytes(sm int) int {
	if sm >= 90 {
		return 64
	}
	return 32
}

// coalesceName is MIPP's name for k threads per transaction: 1/32 (none) ... 1/1 (full).
func coalesceName(k int) string { return fmt.Sprintf("1/%d", 32/k) }

// AccessSize generates the access-size variant (MIPP Fig. 7): a grid-stride copy with
// elements of bytes = 1, 2, 4, 8 or 16 (ld/st.global.u8, .u16, .u32, .v2.u32, .v4.u32),
// fully coalesced. Bytes[DRAM] = Requested = bytes read + written; the buffers are the
// same size for every element size (Opts.Bytes, default 1 GiB each).
func AccessSize(bytes int, o Opts) (Descriptor, error) {
	if bytes < 1 || bytes > 16 || bytes&(bytes-1) != 0 {
		return Descriptor{}, fmt.Errorf("kernels: access size %d bytes: want 1, 2, 4, 8 or 16", bytes)
	}
	return stream(o, streamSpec{name: fmt.Sprintf("access.%dB", bytes), group: "access-size", level: DRAM,
		elem: bytes, copy: true, bytes: gib, variant: map[string]float64{"access_bytes": float64(bytes)},
		notes: []string{fmt.Sprintf("Grid-stride copy of %d-byte elements, one element per thread per access.", bytes)}})
}

var (
	ldSuffix = map[int]string{1: "u8", 2: "u16", 4: "u32", 8: "v2.u32", 16: "v4.u32"}
)

func stream(o Opts, sp streamSpec) (Descriptor, error) {
	defUnroll := 4
	if sp.level == L2 {
		defUnroll = 2
	}
	s, err := o.shape(defUnroll)
	if err != nil {
		return Descriptor{}, err
	}
	if o.Bytes > 0 {
		sp.bytes = o.Bytes
	}
	T := s.total
	words := max(1, sp.elem/4)

	// The layout: a row is what the grid reads with one access per thread.
	var row int64     // bytes between a thread's consecutive accesses
	var sectors int64 // 32-byte sectors one row moves
	if sp.coalesce > 0 {
		if s.threads%32 != 0 {
			return Descriptor{}, fmt.Errorf("kernels: %s: threads per block must be a multiple of 32", sp.name)
		}
		groups := int64(32 / sp.coalesce)
		span := max(groups*128, 128) // bytes a warp's access spans
		row = T / 32 * span
		// DRAM moves whole fetch units (DRAMFetchBytes): a group's words, rounded up.
		f := int64(DRAMFetchBytes(s.target.SM))
		perGroup := (int64(sp.coalesce)*4 + f - 1) / f * (f / 32)
		sectors = T / 32 * groups * perGroup
	} else {
		row = T * int64(sp.elem)
		sectors = row / 32
	}
	step := row * int64(s.unroll)
	if (int64(s.unroll)-1)*row > 1<<31-1 {
		return Descriptor{}, fmt.Errorf("kernels: %s: %d accesses of %d-byte rows do not fit PTX's 32-bit address offsets; use fewer threads or a smaller unroll", sp.name, s.unroll, row)
	}
	steps := max(1, sp.bytes/step)
	if steps > 1<<31 {
		return Descriptor{}, fmt.Errorf("kernels: %s: %d bytes is too large", sp.name, sp.bytes)
	}
	buf := steps * step // the buffer: whole steps
	perPass := map[MemLevel]int64{}
	moved := sectors * 32 * int64(s.unroll) * steps // bytes at the level per pass and direction
	requested := T * int64(sp.elem) * int64(s.unroll) * steps
	if sp.coalesce == 0 {
		moved = requested
	}
	dirs := int64(1)
	if sp.copy {
		dirs = 2
	}
	perPass[sp.level] = moved * dirs

	passes := s.iters
	if passes == 0 {
		rate := expectedRate(sp, s)
		passes = s.sizeIters(float64(perPass[sp.level]) / rate)
	}

	e := newEmitter(entryName(sp.name))
	var pOut, pDst string
	if !sp.copy {
		pOut = e.param(Param{Name: "out", Kind: Buffer, Size: 8})
	}
	pSrc := e.param(Param{Name: "src", Kind: Buffer, Size: buf})
	if sp.copy {
		pDst = e.param(Param{Name: "dst", Kind: Buffer, Size: buf})
	}
	pSteps := e.param(Param{Name: "steps", Kind: U32, Int: uint64(steps)})
	pPasses := e.param(Param{Name: "passes", Kind: U32, Int: uint64(passes)})
	var pMagic string
	if !sp.copy {
		pMagic = e.param(Param{Name: "magic", Kind: U32, Int: magic32})
	}

	// Prologue: parameters, the thread's first address.
	rdSrc, rdDst, rdOut := e.reg("%rd"), "", ""
	e.raw("ld.param.u64 %s, [%s]", rdSrc, pSrc)
	e.raw("cvta.to.global.u64 %s, %s", rdSrc, rdSrc)
	if sp.copy {
		rdDst = e.reg("%rd")
		e.raw("ld.param.u64 %s, [%s]", rdDst, pDst)
		e.raw("cvta.to.global.u64 %s, %s", rdDst, rdDst)
	} else {
		rdOut = e.reg("%rd")
		e.raw("ld.param.u64 %s, [%s]", rdOut, pOut)
		e.raw("cvta.to.global.u64 %s, %s", rdOut, rdOut)
	}
	rSteps, rPasses := e.reg("%r"), e.reg("%r")
	e.raw("ld.param.u32 %s, [%s]", rSteps, pSteps)
	e.raw("ld.param.u32 %s, [%s]", rPasses, pPasses)
	var rMagic, rAcc string
	if !sp.copy {
		rMagic, rAcc = e.reg("%r"), e.reg("%r")
		e.raw("ld.param.u32 %s, [%s]", rMagic, pMagic)
		e.raw("mov.u32 %s, 0", rAcc)
	}
	tid, cta, gid := e.reg("%r"), e.reg("%r"), e.reg("%r")
	e.raw("mov.u32 %s, %%tid.x", tid)
	e.raw("mov.u32 %s, %%ctaid.x", cta)
	e.op(Int32Mul, "mad.lo.s32 %s, %s, %d, %s", gid, cta, s.threads, tid)
	off := e.reg("%rd")
	if sp.coalesce > 0 {
		// offset = warp × span + (lane / k) × 128 + (lane mod k) × 4
		k := sp.coalesce
		groups := 32 / k
		span := max(groups*128, 128)
		w, lane, g, j, small := e.reg("%r"), e.reg("%r"), e.reg("%r"), e.reg("%r"), e.reg("%r")
		e.comment("lanes in groups of %d, groups 128 B apart: offset = warp*%d + (lane/%d)*128 + (lane%%%d)*4", k, span, k, k)
		e.op(Int32Shift, "shr.u32 %s, %s, 5", w, gid)
		e.op(Int32Logic, "and.b32 %s, %s, 31", lane, gid)
		e.op(Int32Shift, "shr.u32 %s, %s, %d", g, lane, bits.TrailingZeros(uint(k)))
		e.op(Int32Logic, "and.b32 %s, %s, %d", j, lane, k-1)
		e.op(Int32Shift, "shl.b32 %s, %s, 7", g, g)
		e.op(Int32Mul, "mad.lo.s32 %s, %s, 4, %s", small, j, g)
		e.op(Int32Mul, "mul.wide.u32 %s, %s, %d", off, w, span)
		small64 := e.reg("%rd")
		e.raw("cvt.u64.u32 %s, %s", small64, small)
		e.op(Int64Add, "add.s64 %s, %s, %s", off, off, small64)
	} else {
		e.op(Int32Mul, "mul.wide.u32 %s, %s, %d", off, gid, sp.elem)
	}
	p0 := e.reg("%rd")
	e.op(Int64Add, "add.s64 %s, %s, %s", p0, rdSrc, off)
	var q0 string
	if sp.copy {
		q0 = e.reg("%rd")
		e.op(Int64Add, "add.s64 %s, %s, %s", q0, rdDst, off)
	}

	// The loops.
	lp := e.beginLoop("passes", rPasses)
	p := e.reg("%rd")
	e.raw("mov.u64 %s, %s", p, p0)
	var q string
	if sp.copy {
		q = e.reg("%rd")
		e.raw("mov.u64 %s, %s", q, q0)
	}
	ls := e.beginLoop("steps", rSteps)
	data := make([][]string, s.unroll)
	for u := range s.unroll {
		data[u] = e.regsN("%r", words)
		e.raw("ld.global%s.%s %s, [%s+%d]", sp.cache, ldSuffix[sp.elem], vec(data[u]), p, int64(u)*row)
	}
	if sp.copy {
		for u := range s.unroll {
			e.raw("st.global.%s [%s+%d], %s", ldSuffix[sp.elem], q, int64(u)*row, vec(data[u]))
		}
	} else {
		for u := range s.unroll {
			for _, d := range data[u] {
				e.op(Int32Logic, "xor.b32 %s, %s, %s", rAcc, rAcc, d)
			}
		}
	}
	e.op(Int64Add, "add.s64 %s, %s, %d", p, p, step)
	if sp.copy {
		e.op(Int64Add, "add.s64 %s, %s, %d", q, q, step)
	}
	e.endLoop(ls)
	e.endLoop(lp)
	if !sp.copy {
		pr := e.reg("%p")
		e.op(Setp, "setp.eq.b32 %s, %s, %s", pr, rAcc, rMagic)
		e.raw("@%s st.global.b32 [%s], %s", pr, rdOut, rAcc)
	}
	e.raw("ret")

	trips := map[string]int64{"passes": int64(passes), "steps": steps}
	ops, overhead, _ := e.tally(trips, T)
	bytes := map[MemLevel]int64{sp.level: perPass[sp.level] * int64(passes)}
	notes := append([]string{fmt.Sprintf("%d threads, %d passes × %d steps × %d accesses of %d B; buffer %d B%s.",
		T, passes, steps, s.unroll, sp.elem, buf, map[bool]string{true: " (×2: source and destination)", false: ""}[sp.copy])},
		sp.notes...)
	notes = append(notes, "Ops are the overhead's arithmetic (address, loop counters, keep-alive xor).")
	comments := []string{
		fmt.Sprintf("%s: %d threads (%d blocks x %d), %d accesses of %d B per step, steps = %d per pass.", sp.name, T, s.blocks, s.threads, s.unroll, sp.elem, steps),
		fmt.Sprintf("Parameters: %s.", paramList(e.params)),
	}
	return Descriptor{
		Name: sp.name, Group: sp.group, PTX: e.render(sp.name, s.target, s, comments), Entry: e.entry,
		Blocks: s.blocks, Threads: s.threads, Params: e.descParams(),
		Ops: ops, Overhead: overhead, Bytes: bytes, Requested: requested * dirs * int64(passes),
		Variant: sp.variant, Notes: strings.Join(notes, " "),
	}, nil
}

// expectedRate is the rate of Bytes[level] a streaming kernel is sized for.
func expectedRate(sp streamSpec, s shape) float64 {
	switch {
	case sp.level == L2:
		return s.dev.L2BytesPerSec
	case sp.group == "access-size":
		// Small elements reach less of DRAM's bandwidth (measured on an H200, 2026-11-21:
		// 2.45, 2.78, 3.52, 3.88, 3.95 TB/s for 1 to 16 bytes).
		f := map[int]float64{1: 0.6, 2: 0.7, 4: 0.88, 8: 0.97, 16: 1}[sp.elem]
		return f * s.dev.DRAMBytesPerSec
	case sp.coalesce > 0 && sp.coalesce*4 < 64:
		// Groups narrower than 64 bytes: DRAM moves 64 bytes for each 32-byte sector
		// asked for (measured on an H200: 1.89 TB/s of sectors for 1 to 8 lanes per
		// group, 3.80 for 16, 4.35 for 32).
		return s.dev.DRAMBytesPerSec / 2
	}
	return s.dev.DRAMBytesPerSec
}

// vec formats a load/store operand: {%r1, %r2} or %r1.
func vec(rs []string) string {
	if len(rs) == 1 {
		return rs[0]
	}
	return "{" + strings.Join(rs, ", ") + "}"
}

// onChipSpec describes one of the shared/constant kernels.
type onChipSpec struct {
	name, group string
	level       MemLevel
	conflicts   int // BankConflicts: extra wavefronts; -1: SharedRead/ConstRead
}

// SharedRead generates a sequence of shared-memory loads (ld.volatile.shared.u32, volatile
// so that ptxas keeps every one), each warp reading 32 consecutive words (no bank
// conflict). Bytes[Shared] = 4 bytes per load and thread. Unroll defaults to 8.
func SharedRead(o Opts) (Descriptor, error) {
	return onChip(o, onChipSpec{name: "shared.read", group: "memory", level: Shared, conflicts: -1})
}

// BankConflicts generates the bank-conflict variant (MIPP Figs. 4, 5, 8): a sequence of
// shared-memory stores (st.volatile.shared.u32) where every warp store meets exactly n
// extra conflicts (n+1 wavefronts), n = 0..31: lanes 0..n write distinct words of bank 0
// and the other lanes one bank each, word = lane + 31*min(lane, n).
//
// MIPP's offset lane*(n+1) gives gcd(n+1, 32)-way conflicts, which is n+1 only when n+1
// is a power of two (lane*3 hits 32 different banks): this layout keeps MIPP's meaning
// ("n conflicts") for every n. Bytes[Shared] = 4 bytes per store and thread, requested.
func BankConflicts(n int, o Opts) (Descriptor, error) {
	if n < 0 || n > 31 {
		return Descriptor{}, fmt.Errorf("kernels: %d bank conflicts: want 0 to 31", n)
	}
	return onChip(o, onChipSpec{name: fmt.Sprintf("bank.%d", n), group: "bank-conflicts", level: Shared, conflicts: n})
}

// ConstRead generates a sequence of constant-memory loads (ld.const.u32) from a 1 KiB
// array of the module's constant bank; all threads of a warp read the same word (the
// constant cache's broadcast), and the words move on every iteration so that ptxas can
// hoist nothing. Bytes[Const] = 4 bytes per load and thread (requested; a warp's load is
// one 4-byte broadcast). The loads are two words apart, so that ptxas cannot pair them
// into 8-byte loads. Unroll defaults to 8.
func ConstRead(o Opts) (Descriptor, error) {
	return onChip(o, onChipSpec{name: "const.read", group: "memory", level: Const, conflicts: -1})
}

const (
	constWords = 256 // the constant array's words (1 KiB), a power of two
)

func onChip(o Opts, sp onChipSpec) (Descriptor, error) {
	s, err := o.shape(8)
	if err != nil {
		return Descriptor{}, err
	}
	T := s.total
	iters := s.iters
	perIter := float64(T) * float64(s.unroll) * 4 // bytes per iteration
	if iters == 0 {
		// Shared memory: 128 B per clock per SM (32 banks of 4 B), a conflict costs a
		// wavefront. Constant cache: a warp-uniform load every other clock per SM, 64 B
		// (thread-level) per clock (measured on an H200: 63.6).
		perClock := 128.0
		if sp.level == Const {
			perClock = 64
		}
		rate := perClock * float64(s.dev.SMs) * s.dev.ClockHz
		if sp.conflicts > 0 {
			rate /= float64(sp.conflicts + 1)
		}
		iters = s.sizeIters(perIter / rate)
	}

	e := newEmitter(entryName(sp.name))
	store := sp.conflicts >= 0
	var pOut, pMagic string
	if !store {
		pOut = e.param(Param{Name: "out", Kind: Buffer, Size: 8})
	}
	pIters := e.param(Param{Name: "iters", Kind: U32, Int: uint64(iters)})
	if !store {
		pMagic = e.param(Param{Name: "magic", Kind: U32, Int: magic32})
	}
	rIters := e.reg("%r")
	var rdOut, rMagic, rAcc string
	if !store {
		rdOut, rMagic, rAcc = e.reg("%rd"), e.reg("%r"), e.reg("%r")
		e.raw("ld.param.u64 %s, [%s]", rdOut, pOut)
		e.raw("cvta.to.global.u64 %s, %s", rdOut, rdOut)
		e.raw("ld.param.u32 %s, [%s]", rMagic, pMagic)
		e.raw("mov.u32 %s, 0", rAcc)
	}
	e.raw("ld.param.u32 %s, [%s]", rIters, pIters)

	var notes []string
	variant := map[string]float64(nil)
	var l loop
	switch {
	case sp.level == Shared:
		arrWords := 32*32 + 32*s.unroll // the conflict layout's 1024 words + one row per access
		arr := "gw_smem"
		e.globals = append(e.globals, fmt.Sprintf(".shared .align 16 .b32 %s[%d];", arr, arrWords))
		tid, lane, base, addr := e.reg("%r"), e.reg("%r"), e.reg("%r"), e.reg("%r")
		e.raw("mov.u32 %s, %%tid.x", tid)
		e.op(Int32Logic, "and.b32 %s, %s, 31", lane, tid)
		e.raw("mov.u32 %s, %s", base, arr)
		if store {
			n := sp.conflicts
			m, word := e.reg("%r"), e.reg("%r")
			e.comment("lanes 0..%d write distinct words of bank 0, the others a bank each: word = lane + 31*min(lane, %d)", n, n)
			e.op(Int32Cmp, "min.u32 %s, %s, %d", m, lane, n)
			e.op(Int32Mul, "mad.lo.s32 %s, %s, 31, %s", word, m, lane)
			e.op(Int32Mul, "mad.lo.s32 %s, %s, 4, %s", addr, word, base)
			l = e.beginLoop("iters", rIters)
			for u := range s.unroll {
				e.raw("st.volatile.shared.u32 [%s+%d], %s", addr, u*128, l.counter)
			}
			variant = map[string]float64{"conflicts": float64(n), "wavefronts": float64(n + 1)}
			notes = append(notes, fmt.Sprintf("Every warp store takes %d wavefronts (%d extra conflicts): lanes 0..%d hit bank 0.", n+1, n, n),
				"MIPP's lane*(n+1) offsets give gcd(n+1,32)-way conflicts; this layout gives n+1 for every n.")
		} else {
			e.op(Int32Mul, "mad.lo.s32 %s, %s, 4, %s", addr, lane, base)
			l = e.beginLoop("iters", rIters)
			data := e.regsN("%r", s.unroll)
			for u, d := range data {
				e.raw("ld.volatile.shared.u32 %s, [%s+%d]", d, addr, u*128)
			}
			for _, d := range data {
				e.op(Int32Logic, "xor.b32 %s, %s, %s", rAcc, rAcc, d)
			}
			notes = append(notes, "Each warp load reads 32 consecutive words: one wavefront, no conflict.")
		}
		notes = append(notes, "Volatile accesses: ptxas keeps every one.")
	case sp.level == Const:
		arr := "gw_cdata"
		// Loads two words apart, so that ptxas cannot pair them into one LDC.64.
		e.globals = append(e.globals, fmt.Sprintf(".const .align 4 .b32 %s[%d];", arr, constWords+2*s.unroll))
		base, o32, o64, addr := e.reg("%rd"), e.reg("%r"), e.reg("%rd"), e.reg("%rd")
		e.raw("mov.u64 %s, %s", base, arr)
		e.raw("mov.u32 %s, 0", o32)
		l = e.beginLoop("iters", rIters)
		e.raw("cvt.u64.u32 %s, %s", o64, o32)
		e.op(Int64Add, "add.s64 %s, %s, %s", addr, base, o64)
		data := e.regsN("%r", s.unroll)
		for u, d := range data {
			e.raw("ld.const.u32 %s, [%s+%d]", d, addr, 8*u)
		}
		for _, d := range data {
			e.op(Int32Logic, "xor.b32 %s, %s, %s", rAcc, rAcc, d)
		}
		e.comment("move on %d words, wrapping in the %d-word array", 2*s.unroll, constWords)
		e.op(Int32Add, "add.s32 %s, %s, %d", o32, o32, 8*s.unroll)
		e.op(Int32Logic, "and.b32 %s, %s, %d", o32, o32, 4*constWords-1)
		notes = append(notes, "Warp-uniform addresses (one broadcast per warp load); the constant array is the module's, zero-filled.")
	}
	e.endLoop(l)
	if !store {
		pr := e.reg("%p")
		e.op(Setp, "setp.eq.b32 %s, %s, %s", pr, rAcc, rMagic)
		e.raw("@%s st.global.b32 [%s], %s", pr, rdOut, rAcc)
	}
	e.raw("ret")

	ops, overhead, _ := e.tally(map[string]int64{"iters": int64(iters)}, T)
	b := T * int64(iters) * int64(s.unroll) * 4
	notes = append([]string{fmt.Sprintf("%d threads × %d iterations × %d accesses of 4 B.", T, iters, s.unroll)}, notes...)
	notes = append(notes, "Ops are the overhead's arithmetic (addresses, loop counter, keep-alive xor).")
	comments := []string{
		fmt.Sprintf("%s: %d threads (%d blocks x %d) x iters x %d accesses of 4 B.", sp.name, T, s.blocks, s.threads, s.unroll),
		fmt.Sprintf("Parameters: %s.", paramList(e.params)),
	}
	return Descriptor{
		Name: sp.name, Group: sp.group, PTX: e.render(sp.name, s.target, s, comments), Entry: e.entry,
		Blocks: s.blocks, Threads: s.threads, Params: e.descParams(),
		Ops: ops, Overhead: overhead, Bytes: map[MemLevel]int64{sp.level: b},
		Variant: variant, Notes: strings.Join(notes, " "),
	}, nil
}
