package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/job"
	"github.com/gpuwatt/gpuwatt/internal/measure"
)

// recordersOf counts the live processes whose command line is a recorder of dir.
func recordersOf(dir string) int {
	return len(recorderPIDs(func(a string) bool { return a == dir }))
}

// killRecordersUnder kills every live recorder of a job directory under base: a test's
// clean-up, which must not miss one that begin.json does not name (a begin set aside, a
// begin that failed).
func killRecordersUnder(base string) {
	for _, pid := range recorderPIDs(func(a string) bool { return strings.HasPrefix(a, base+string(filepath.Separator)) }) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// recorderPIDs are the live (not zombie) processes whose command line holds "record" and
// an argument isDir accepts.
func recorderPIDs(isDir func(string) bool) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := strings.LastIndexByte(string(st), ')'); i > 0 && i+2 < len(st) && st[i+2] == 'Z' {
			continue
		}
		args := strings.Split(string(b), "\x00")
		rec, d := false, false
		for _, a := range args {
			rec, d = rec || a == "record", d || isDir(a)
		}
		pid, err := strconv.Atoi(e.Name())
		if rec && d && err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestJobConcurrentBegins: eight concurrent job begins of one id give one begin (exit 0)
// and seven refusals (exit 2): one recorder, gone after job end (several were started and
// ran for ever). Files planted in the job's directory as symlinks are replaced, not
// written through; the directory is 0700 and the recorder's files 0600.
func TestJobConcurrentBegins(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("real processes")
	}
	e := newJobEnv(t)
	jobDir := filepath.Join(e.dir, "101")
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(jobDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{job.PIDFile, job.LogFile, job.ReadyFile} {
		if err := os.Symlink(victim, filepath.Join(jobDir, f)); err != nil {
			t.Fatal(err)
		}
	}
	codes := make([]int, 8)
	errs := make([]string, 8)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _, errs[i] = e.run(t, "job", "begin", "--dir", e.dir, "--device", "sim", "--sim-config", e.simCfg)
		}()
	}
	wg.Wait()
	ok := 0
	for i, c := range codes {
		switch {
		case c == ExitOK:
			ok++
		case c != ExitUsage || !strings.Contains(errs[i], "already begun"):
			t.Errorf("begin %d: exit %d: %s", i, c, errs[i])
		}
	}
	if ok != 1 {
		t.Errorf("%d begins exited 0, want 1 (codes %v)", ok, codes)
	}
	if n := recordersOf(jobDir); n != 1 {
		t.Errorf("%d recorders run, want 1", n)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
		t.Errorf("written through a planted symlink: the victim holds %q", b)
	}
	if st, err := os.Stat(jobDir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("job directory: %v %v, want 0700", st.Mode(), err)
	}
	for _, f := range []string{job.PIDFile, job.LogFile} {
		st, err := os.Lstat(filepath.Join(jobDir, f))
		if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want a regular file 0600", f, st.Mode(), err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if code, _, stderr := e.run(t, "job", "end", "--dir", e.dir, "--json"); code != ExitOK {
		t.Errorf("job end: exit %d: %s", code, stderr)
	}
	if n := recordersOf(jobDir); n != 0 {
		t.Errorf("%d recorders run after job end, want 0", n)
	}
}

// TestMeasureChildOutlives: a command that exits while its child works on was reported
// complete without a word; the summary names the child (children_outlived), and with
// --wait-children the measurement lasts until the child ends. The child lives 2 s, so that
// the command without it (a shell that exits at once) is told apart from the child by a
// margin a loaded machine's slow start of sh does not fill (0.8 s and a 0.5 s bound did).
func TestMeasureChildOutlives(t *testing.T) {
	t.Parallel()
	const child = 2.0 // s
	script := fmt.Sprintf("sleep %g >/dev/null 2>&1 &", child)
	sum, _ := measureSh(t, script)
	found := false
	for _, w := range sum.Warnings {
		found = found || w.Code == measure.CodeOutlived && strings.Contains(w.Message, "--wait-children")
	}
	if !found || sum.DurationS > child/2 {
		t.Errorf("without --wait-children: %.3f s (the child lives %g s), warnings %v", sum.DurationS, child, sum.Warnings)
	}
	sum, _ = measureSh(t, script, "--wait-children")
	if sum.DurationS < child-0.05 {
		t.Errorf("--wait-children: the command measured for %.3f s, want the child's %g s", sum.DurationS, child)
	}
}

// TestRecorderEndsWithItsDirectory: a recorder whose job directory is removed (an epilog
// that never ran and a clean-up of /tmp; a test's temporary directory) or replaced by
// another ends itself, having nowhere to save and no end to stop it: recorders of removed
// test jobs ran on for 30 minutes. It checks once a second (job.DirCheck); the bound here
// is generous for a loaded machine, and without the check the recorder never ends.
func TestRecorderEndsWithItsDirectory(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("real processes")
	}
	for _, how := range []string{"removed", "replaced"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			e := newJobEnv(t)
			jobDir := filepath.Join(e.dir, "101")
			if code, _, stderr := e.run(t, "job", "begin", "--dir", e.dir, "--device", "sim", "--sim-config", e.simCfg); code != ExitOK {
				t.Fatalf("job begin: exit %d: %s", code, stderr)
			}
			if n := recordersOf(jobDir); n != 1 {
				t.Fatalf("%d recorders run after begin, want 1", n)
			}
			if err := os.RemoveAll(jobDir); err != nil {
				t.Fatal(err)
			}
			if how == "replaced" {
				if err := os.Mkdir(jobDir, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			gone := time.Now()
			deadline := gone.Add(30 * time.Second)
			for recordersOf(jobDir) > 0 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if n := recordersOf(jobDir); n != 0 {
				t.Fatalf("the job's directory %s %s: %d recorder(s) still run after %s", jobDir, how, n, time.Since(gone).Round(time.Millisecond))
			}
			t.Logf("directory %s: the recorder ended after %s", how, time.Since(gone).Round(time.Millisecond))
		})
	}
}
