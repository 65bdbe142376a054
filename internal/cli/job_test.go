package cli

import (
	"bytes"
	"context"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/job"
	"github.com/gpuwatt/gpuwatt/internal/otlpexport/otlptest"
)

// recorderEnv makes this test binary act as gpuwatt when job begin starts it as the
// recorder (App.Self is the test binary; TestMain runs Main for it).
const recorderEnv = "GPUWATT_TEST_AS_GPUWATT"

// testParentEnv names the test process that begins jobs (newJobEnv): a recorder it started
// ends when that process is gone. A test binary killed by go test's -timeout runs no
// clean-up, and its recorders, detached by design, ran on for ever.
const testParentEnv = "GPUWATT_TEST_PARENT"

func TestMain(m *testing.M) {
	if os.Getenv(recorderEnv) == "1" {
		if p := os.Getenv(testParentEnv); p != "" && p == strconv.Itoa(os.Getppid()) && len(os.Args) > 2 && os.Args[2] == "record" {
			go func() {
				for strconv.Itoa(os.Getppid()) == p {
					time.Sleep(200 * time.Millisecond)
				}
				os.Exit(3) // the test process is gone (reparented): nothing will stop or read it
			}()
		}
		ctx, stop := SignalContext(context.Background())
		code := Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	raiseParallel(8)
	code := m.Run()
	removeSharedRuns()
	os.Exit(code)
}

// raiseParallel lets n of this package's parallel tests run at once where -parallel is not
// given (its default is GOMAXPROCS, 2 on CI): most of them wait on real time (a process's
// sleep, a job's second, a hang's timeout, a real-clock sampler), not on the CPU, and at 2
// they took 73 s of wall for 32 s of CPU.
func raiseParallel(n int) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(max(n, runtime.GOMAXPROCS(0))))
	}
}

// jobSimConfig is two H200 twins that draw 550 W from 0.3 to 0.9 s of the job's axis.
const jobSimConfig = `{"preset": "h200", "gpus": 2, "load": [{"t_s": 0.3, "duration_s": 0.6, "power_w": 550}]}`

type jobEnv struct {
	dir, simCfg string
	cfg         sim.Config
	// self runs this test binary as gpuwatt (the recorder); env is the job's Slurm
	// variables, read through App.Getenv ("" is unset): the job tests run side by side.
	self []string
	env  map[string]string
}

func newJobEnv(t *testing.T) jobEnv {
	t.Helper()
	dir := t.TempDir()
	simCfg := filepath.Join(dir, "sim.json")
	if err := os.WriteFile(simCfg, []byte(jobSimConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := sim.LoadConfigFile(simCfg)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SLURM_JOB_ID": "101", "SLURM_JOB_USER": "alice", "SLURM_JOB_GPUS": "0,1", "CUDA_VISIBLE_DEVICES": ""}
	return jobEnv{dir: filepath.Join(dir, "jobs"), simCfg: simCfg, cfg: cfg, self: selfAsGpuwatt(t), env: env}
}

// selfAsGpuwatt is a command line that runs this test binary as gpuwatt (TestMain), its
// recorder ending when this process is gone: a shell wrapper that sets the two variables
// and execs the binary (the same process, so its parent is still this one).
func selfAsGpuwatt(t *testing.T) []string {
	t.Helper()
	wrapper := filepath.Join(t.TempDir(), "gpuwatt")
	script := "#!/bin/sh\n" + recorderEnv + "=1 " + testParentEnv + "=" + strconv.Itoa(os.Getpid()) + " exec " + shellQuote(os.Args[0]) + ` "$@"` + "\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{wrapper}
}

// with returns e with the variables in vars set ("" unsets), e's own left as they are.
func (e jobEnv) with(vars map[string]string) jobEnv {
	e.env = maps.Clone(e.env)
	maps.Copy(e.env, vars)
	return e
}

func (e jobEnv) getenv(k string) string {
	if v, ok := e.env[k]; ok {
		return v
	}
	return os.Getenv(k)
}

func (e jobEnv) app() (*App, *bytes.Buffer, *bytes.Buffer) {
	var stdout, stderr bytes.Buffer
	off := false
	return &App{Stdout: &stdout, Stderr: &stderr, Host: "node1", Version: "test", Interactive: &off, Self: e.self, Getenv: e.getenv}, &stdout, &stderr
}

func (e jobEnv) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	a, stdout, stderr := e.app()
	code := a.Main(context.Background(), args)
	if len(args) > 1 && args[1] == "begin" {
		// A test that fails before job end must not leave its recorder running: any of
		// its jobs' (begin.json names only the last begin's).
		t.Cleanup(func() {
			if bg, err := job.ReadBegin(filepath.Join(e.dir, "101")); err == nil && bg.RecorderPID > 0 {
				_ = syscall.Kill(bg.RecorderPID, syscall.SIGKILL)
			}
			killRecordersUnder(e.dir)
		})
	}
	return code, stdout.String(), stderr.String()
}

// checkTruth holds each GPU's figure against the twin's true energy over the job's span (a
// fresh twin of the same config: the job's processes share its time axis): on the counter's
// scale inside the 95 % interval, the true energy inside the absolute one.
func (e jobEnv) checkTruth(t *testing.T, res *job.Result) {
	t.Helper()
	sys, err := sim.Open(clock.NewVirtual(time.Time{}), e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	from, to := secs(res.StartS), secs(res.EndS)
	if len(res.GPUs) != 2 {
		t.Fatalf("%d GPUs in job.json, want 2", len(res.GPUs))
	}
	for _, g := range res.GPUs {
		dev := sys.Device(g.Index)
		if g.UUID != dev.Info().UUID {
			t.Errorf("GPU %d: uuid %s, want %s", g.Index, g.UUID, dev.Info().UUID)
		}
		truth := dev.TrueEnergy(from, to).Joules()
		m, _ := dev.Model("energy.total")
		board := m.Gain * truth
		t.Logf("GPU %d: %.2f J [%.2f, %.2f] (%s); truth on the counter's scale %.2f J, true %.2f J [%.2f, %.2f]",
			g.Index, g.EnergyJ, g.LowJ, g.HighJ, g.Method, board, truth, g.AbsoluteLowJ, g.AbsoluteHighJ)
		if !(g.LowJ <= board && board <= g.HighJ) {
			t.Errorf("GPU %d: truth %.2f J (counter's scale) outside [%.2f, %.2f] J", g.Index, board, g.LowJ, g.HighJ)
		}
		if !(g.AbsoluteLowJ <= truth && truth <= g.AbsoluteHighJ) {
			t.Errorf("GPU %d: true %.2f J outside the absolute [%.2f, %.2f] J", g.Index, truth, g.AbsoluteLowJ, g.AbsoluteHighJ)
		}
	}
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func readJob(t *testing.T, dir string) *job.Result {
	t.Helper()
	var r job.Result
	readJSON(t, filepath.Join(dir, "101", job.JobFile), &r)
	return &r
}

// TestJobSimTruth: job begin and job end on two H200 twins (SLURM_JOB_GPUS=0,1), the
// recorder a real detached process: each GPU's energy over the job holds the twin's truth
// in its 95 % interval; job end runs the exact sacctmgr line (a fake sacctmgr on PATH gets
// the arguments) and pushes the same figures over OTLP (a receiver in the test); a second
// begin or end is refused (exit 2).
func TestJobSimTruth(t *testing.T) {
	e := newJobEnv(t)
	fake := t.TempDir()
	argsFile := filepath.Join(fake, "args")
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > " + argsFile + "\n"
	if err := os.WriteFile(filepath.Join(fake, "sacctmgr"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", fake+string(os.PathListSeparator)+os.Getenv("PATH"))
	rcv := otlptest.Start(t)

	code, _, stderr := e.run(t, "job", "begin", "--dir", e.dir, "--device", "sim", "--sim-config", e.simCfg)
	if code != ExitOK {
		t.Fatalf("job begin: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "GPUs 0,1 (SLURM_JOB_GPUS=0,1)") {
		t.Errorf("job begin said %q", stderr)
	}
	code, _, stderr = e.run(t, "job", "begin", "--dir", e.dir, "--device", "sim", "--sim-config", e.simCfg)
	if code != ExitUsage || !strings.Contains(stderr, "already begun") {
		t.Errorf("a second begin: exit %d, %q; want 2, already begun", code, stderr)
	}
	time.Sleep(1200 * time.Millisecond) // the job: the twins' load runs from 0.3 to 0.9 s
	code, stdout, stderr := e.run(t, "job", "end", "--dir", e.dir, "--sacctmgr", "--otlp", rcv.URL)
	if code != ExitOK {
		t.Fatalf("job end: exit %d: %s", code, stderr)
	}
	t.Log(stderr)
	res := readJob(t, e.dir)
	if res.Incomplete || res.Recorder != "ok" || res.JobID != "101" || res.User != "alice" || res.Host != "node1" {
		t.Errorf("job.json: incomplete %v (%s), recorder %q, job %q, user %q, host %q", res.Incomplete, res.Reason, res.Recorder, res.JobID, res.User, res.Host)
	}
	if res.SpanS < 1.1 || res.SpanS > 5 {
		t.Errorf("span %.3f s, want the ~1.2 s between begin and end", res.SpanS)
	}
	e.checkTruth(t, res)

	// The sacctmgr line: printed, and run with exactly those arguments.
	wantLine := "sacctmgr -i modify job where jobid=101 set AdminComment=" + res.AdminComment + "\n" // no quoting: the comment has nothing a shell treats apart
	if stdout != wantLine {
		t.Errorf("stdout %q, want %q", stdout, wantLine)
	}
	got, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatalf("the fake sacctmgr was not run: %v", err)
	}
	want := strings.Join([]string{"-i", "modify", "job", "where", "jobid=101", "set", "AdminComment=" + res.AdminComment}, "\n") + "\n"
	if string(got) != want {
		t.Errorf("sacctmgr got\n%s\nwant\n%s", got, want)
	}
	// The twin says so in job.json and in the AdminComment (issue 29).
	if !res.Simulated || !strings.Contains(res.AdminComment, ",simulated=1,") {
		t.Errorf("job.json simulated %v, AdminComment %s", res.Simulated, res.AdminComment)
	}
	if !strings.HasPrefix(res.AdminComment, `gpuwatt=gpuwatt-job/1,energy_j=`) || strings.ContainsAny(res.AdminComment, "'\" \n") {
		t.Errorf("AdminComment %s", res.AdminComment)
	}

	// OTLP: one request with each GPU's figures as job.json has them.
	reqs := rcv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d OTLP requests, want 1", len(reqs))
	}
	rs := otlptest.Resource(reqs[0])
	if rs["gpuwatt.job.id"] != "101" || rs["host.name"] != "node1" || rs["service.name"] != "gpuwatt" || rs["gpuwatt.job.user"] != "alice" {
		t.Errorf("resource %v", rs)
	}
	n := 0
	for _, p := range otlptest.Points(reqs[0]) {
		for _, g := range res.GPUs {
			if p.Attrs["gpuwatt.gpu.uuid"] != g.UUID {
				continue
			}
			var want float64
			switch p.Metric {
			case "hw.energy":
				want = g.EnergyJ
			case "gpuwatt.hw.energy.low":
				want = g.LowJ
			case "gpuwatt.hw.energy.high":
				want = g.HighJ
			case "hw.power":
				want = g.MeanPowerW
			}
			n++
			if p.Value != want || p.Attrs["gpuwatt.energy.source"] != string(g.Method) || p.Attrs["hw.type"] != "gpu" {
				t.Errorf("%s of GPU %d: %g (%v), want %g from job.json (source %s)", p.Metric, g.Index, p.Value, p.Attrs, want, g.Method)
			}
		}
	}
	if n != 8 {
		t.Errorf("%d points of the job's GPUs, want 4 metrics x 2 GPUs", n)
	}

	code, _, stderr = e.run(t, "job", "end", "--dir", e.dir)
	if code != ExitUsage || !strings.Contains(stderr, "already ended") {
		t.Errorf("a second end: exit %d, %q; want 2, already ended", code, stderr)
	}

	// Slurm requeues the job: begun again, the first run's files are set aside.
	code, _, stderr = e.run(t, "job", "begin", "--dir", e.dir, "--device", "sim", "--sim-config", e.simCfg)
	if code != ExitOK || !strings.Contains(stderr, "moved to "+filepath.Join(e.dir, "101.1")) {
		t.Fatalf("begin of a requeued job: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "101.1", job.JobFile)); err != nil {
		t.Errorf("the first run's job.json: %v", err)
	}
	if code, _, stderr = e.run(t, "job", "end", "--dir", e.dir); code != ExitOK {
		t.Errorf("end of the requeued job: exit %d: %s", code, stderr)
	}
}

// TestJobRecorderDied: the recorder killed mid-job (SIGKILL): job end says so, marks the
// job incomplete, and gives each GPU's energy from the counters read by begin and end, whose
// interval still holds the truth.
func TestJobRecorderDied(t *testing.T) {
	t.Parallel()
	e := newJobEnv(t)
	code, _, stderr := e.run(t, "job", "begin", "--dir", e.dir, "--device", "sim", "--sim-config", e.simCfg)
	if code != ExitOK {
		t.Fatalf("job begin: exit %d: %s", code, stderr)
	}
	bg, err := job.ReadBegin(filepath.Join(e.dir, "101"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	if err := syscall.Kill(bg.RecorderPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	code, _, stderr = e.run(t, "job", "end", "--dir", e.dir)
	if code != ExitOK {
		t.Fatalf("job end: exit %d: %s", code, stderr)
	}
	res := readJob(t, e.dir)
	if !res.Incomplete || !strings.Contains(res.Recorder, "not running") || !strings.Contains(stderr, "incomplete") {
		t.Errorf("incomplete %v, recorder %q; stderr %s", res.Incomplete, res.Recorder, stderr)
	}
	for _, g := range res.GPUs {
		if g.Method != job.CounterOnly {
			t.Errorf("GPU %d: source %s, want %s", g.Index, g.Method, job.CounterOnly)
		}
	}
	e.checkTruth(t, res)
}

func TestJobBadInput(t *testing.T) {
	t.Parallel()
	e := newJobEnv(t)
	for _, tc := range []struct {
		name  string
		env   map[string]string // "" unsets
		args  []string
		want  string
		empty bool
	}{
		{"end without begin", nil, []string{"job", "end", "--dir", e.dir}, "no begin.json", false},
		{"no job id", map[string]string{"SLURM_JOB_ID": ""}, []string{"job", "begin", "--dir", e.dir, "--device", "sim"}, "no job id: SLURM_JOB_ID is not set", false},
		{"no GPUs", map[string]string{"SLURM_JOB_GPUS": "", "CUDA_VISIBLE_DEVICES": ""}, []string{"job", "begin", "--dir", e.dir, "--device", "sim"}, "no GPUs: neither SLURM_JOB_GPUS nor CUDA_VISIBLE_DEVICES", false},
		{"no such GPU", map[string]string{"SLURM_JOB_GPUS": "0,5"}, []string{"job", "begin", "--dir", e.dir, "--device", "sim"}, "SLURM_JOB_GPUS=0,5: GPU 5: no such GPU", false},
		{"bad uuid", nil, []string{"job", "begin", "--dir", e.dir, "--device", "sim", "--gpu", "GPU-nothere"}, `"GPU-nothere" matches 0 GPUs`, false},
		{"bad job id", nil, []string{"job", "begin", "--job", "../x", "--dir", e.dir, "--device", "sim"}, `job id "../x"`, false},
		{"bad channels", nil, []string{"job", "begin", "--dir", e.dir, "--device", "sim", "--channels", "power.["}, `--channels "power.["`, false},
		{"bad otlp", nil, []string{"job", "end", "--dir", e.dir, "--otlp", "collector:4318"}, `--otlp "collector:4318"`, false},
		{"no subcommand", nil, []string{"job"}, "want a subcommand", false},
		{"unknown subcommand", nil, []string{"job", "start"}, `unknown subcommand "start"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := e.with(tc.env).run(t, tc.args...)
			if code != ExitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line with %q", code, stderr, tc.want)
			}
			if stdout != "" {
				t.Errorf("stdout %q", stdout)
			}
		})
	}
	if ents, _ := os.ReadDir(filepath.Join(e.dir, "101")); len(ents) > 0 {
		t.Errorf("bad input left files in the job's directory: %v", ents)
	}
}

// TestJobCounterChannel: with --channels energy.total (jobs of days) the recorder keeps only
// the counter, and the figure still holds the truth: the counter's own where it has the
// readings, else interpolated across begin's and end's readings with its interval.
func TestJobCounterChannel(t *testing.T) {
	t.Parallel()
	e := newJobEnv(t)
	code, _, stderr := e.run(t, "job", "begin", "--dir", e.dir, "--device", "sim", "--sim-config", e.simCfg, "--channels", "energy.total")
	if code != ExitOK {
		t.Fatalf("job begin: exit %d: %s", code, stderr)
	}
	time.Sleep(1100 * time.Millisecond)
	code, _, stderr = e.run(t, "job", "end", "--dir", e.dir)
	if code != ExitOK {
		t.Fatalf("job end: exit %d: %s", code, stderr)
	}
	res := readJob(t, e.dir)
	for _, g := range res.GPUs {
		if !strings.HasPrefix(string(g.Method), "counter") {
			t.Errorf("GPU %d: source %s, want the counter's", g.Index, g.Method)
		}
	}
	e.checkTruth(t, res)
}
