package job

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/status"
)

// TestGPUSpec: --gpu, then SLURM_JOB_GPUS, then CUDA_VISIBLE_DEVICES; a variable that is set
// but names no GPU is bad input, as is none at all.
func TestGPUSpec(t *testing.T) {
	for _, tc := range []struct {
		flag, slurm, cuda, want, from string
		bad                           bool
	}{
		{flag: "1", slurm: "0", cuda: "2", want: "1", from: "--gpu 1"},
		{slurm: "0,1", cuda: "2", want: "0,1", from: "SLURM_JOB_GPUS=0,1"},
		{cuda: "GPU-5a1d0000", want: "GPU-5a1d0000", from: "CUDA_VISIBLE_DEVICES=GPU-5a1d0000"},
		{cuda: "NoDevFiles", bad: true},
		{bad: true},
	} {
		env := map[string]string{"SLURM_JOB_GPUS": tc.slurm, "CUDA_VISIBLE_DEVICES": tc.cuda}
		spec, from, err := GPUSpec(tc.flag, func(k string) string { return env[k] })
		if tc.bad {
			if !errors.Is(err, status.ErrInput) {
				t.Errorf("%+v: %v, want bad input", tc, err)
			}
			continue
		}
		if err != nil || spec != tc.want || from != tc.from {
			t.Errorf("%+v: %q %q %v", tc, spec, from, err)
		}
	}
}

// TestResolveGPUs: indices and UUIDs (a unique prefix), sorted by index; ambiguity, MIG and
// duplicates refused.
func TestResolveGPUs(t *testing.T) {
	cfg, err := sim.Preset("h200")
	if err != nil {
		t.Fatal(err)
	}
	cfg.GPUs = 3
	sys, err := sim.Open(clock.NewVirtual(time.Time{}), cfg)
	if err != nil {
		t.Fatal(err)
	}
	devs := sys.Devices()
	u2 := devs[2].Info().UUID
	got, err := ResolveGPUs(u2+",0", "test", devs)
	if err != nil || len(got) != 2 || got[0].Info().Index != 0 || got[1].Info().Index != 2 {
		t.Fatalf("%s,0: %v %v", u2, got, err)
	}
	if got, err := ResolveGPUs(u2[:20], "test", devs); err != nil || got[0].Info().Index != 2 {
		t.Errorf("prefix %s: %v %v", u2[:20], got, err)
	}
	for _, bad := range []string{"GPU-5a1d", "MIG-1234567890", "0,0", "3", "x", u2 + ",2"} {
		if _, err := ResolveGPUs(bad, "test", devs); !errors.Is(err, status.ErrInput) {
			t.Errorf("%q: %v, want bad input", bad, err)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{"101": "101", `{"a":1}`: `'{"a":1}'`, "it's": `'it'\''s'`, "": "''"} {
		if got := shellQuote(in); got != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
	}
}

// FuzzReadBegin: whatever begin.json holds, ReadBegin returns a record or an error, never
// panics; an error for a file that is there is bad input.
func FuzzReadBegin(f *testing.F) {
	f.Add([]byte(`{"format":"gpuwatt-job-begin/1","job_id":"7","start":"2026-11-24T03:00:00Z","gpus":[{"index":0,"uuid":"GPU-1","counter":{"t_s":0.001,"energy_j":12.5}}]}`))
	f.Add([]byte(`{"format":"other"}`))
	f.Add([]byte(`{`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, BeginFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		bg, err := ReadBegin(dir)
		if err != nil && !errors.Is(err, status.ErrInput) {
			t.Errorf("error %v is not bad input", err)
		}
		if err == nil && bg.Format != BeginFormat {
			t.Errorf("format %q accepted", bg.Format)
		}
	})
}
