package kernels

// Baseline generates the baseline kernel of seed 002 (Algorithm 1): each thread computes
// its index and, only if a secret parameter is non-zero (it never is), stores it to shared
// memory (a predicated store rather than a branch). Launched back to back it keeps the GPU
// in its top performance state while doing next to nothing, so its power is the baseline
// power pi0 that every other kernel's energy per operation is shown apart from. Reads
// Opts.Device, Threads, Blocks.
//
// Ops counts the index computation (mad.lo.s32) and the shared-memory address (and, shl,
// add); the compare is a setp. All of it is Overhead: the kernel measures nothing but the
// GPU's baseline. A launch lasts a few microseconds: the measurement loop runs it hundreds
// of thousands of times.
func Baseline(o Opts) (Descriptor, error) {
	s, err := o.shape(1)
	if err != nil {
		return Descriptor{}, err
	}
	const name = "baseline"
	e := newEmitter(entryName(name))
	pSecret := e.param(Param{Name: "secret", Kind: U32, Int: 0})
	arr := "gw_smem"
	e.globals = append(e.globals, ".shared .align 4 .b32 "+arr+"[1024];")
	tid, cta, ntid, idx, secret := e.reg("%r"), e.reg("%r"), e.reg("%r"), e.reg("%r"), e.reg("%r")
	off, base, p := e.reg("%r"), e.reg("%r"), e.reg("%p")
	e.raw("mov.u32 %s, %%tid.x", tid)
	e.raw("mov.u32 %s, %%ctaid.x", cta)
	e.raw("mov.u32 %s, %%ntid.x", ntid)
	e.op(Int32Mul, "mad.lo.s32 %s, %s, %s, %s", idx, cta, ntid, tid)
	e.raw("ld.param.u32 %s, [%s]", secret, pSecret)
	e.op(Setp, "setp.ne.s32 %s, %s, 0", p, secret)
	e.op(Int32Logic, "and.b32 %s, %s, 1023", off, tid)
	e.op(Int32Shift, "shl.b32 %s, %s, 2", off, off)
	e.raw("mov.u32 %s, %s", base, arr)
	e.op(Int32Add, "add.s32 %s, %s, %s", base, base, off)
	e.raw("@%s st.shared.u32 [%s], %s", p, base, idx)
	e.raw("ret")
	ops, overhead, _ := e.tally(nil, s.total)
	comments := []string{"Seed 002, Algorithm 1: thread index, and a store that only a non-zero secret (never passed) enables."}
	return Descriptor{
		Name: name, Group: "baseline", PTX: e.render(name, s.target, s, comments), Entry: e.entry,
		Blocks: s.blocks, Threads: s.threads, Params: e.descParams(),
		Ops: ops, Overhead: overhead,
		Notes: "Seed 002's baseline kernel: its power is pi0, the GPU at its top clock doing (almost) nothing. The store is never executed: the secret is 0.",
	}, nil
}
