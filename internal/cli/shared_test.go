package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// sharedRun is one run of gpuwatt on the virtual clock whose output several tests check,
// each a different thing of it (as sensorchar's tests share their quick runs): the run is
// made once, by the first test that asks, and its files are read, never changed. A test
// that writes into the directory, or needs a run of its own flags, makes its own run.
type sharedRun struct {
	args []string // gpuwatt's arguments; "OUT" is replaced by the run's directory

	once           sync.Once
	out            string // the run's --out directory
	code           int
	stdout, stderr []byte
	err            error
}

// Shared runs. Each is named for the tests that read it.
var (
	// TestSensorWritesFiles (its figures against golden files) and TestEveryVerbOnSim/sensor
	// (the verb runs on the h100 twin): sensor --quick on sim:h100 is 1.5-2 s of CPU.
	sensorH100Quick = &sharedRun{args: []string{"sensor", "--device", "sim:h100", "--quick", "--out", "OUT"}}
)

// sharedRoot holds every shared run's directory; TestMain removes it.
var sharedRoot struct {
	sync.Mutex
	dir string
}

// removeSharedRuns removes the shared runs' directories (TestMain, after the tests).
func removeSharedRuns() {
	sharedRoot.Lock()
	defer sharedRoot.Unlock()
	if sharedRoot.dir != "" {
		os.RemoveAll(sharedRoot.dir)
	}
}

// get makes the run on its first call and returns it: the directory (its "OUT"), the exit
// code and what it wrote on stdout and stderr. A failure to set up fails t.
func (r *sharedRun) get(t *testing.T) (out string, code int, stdout, stderr []byte) {
	t.Helper()
	r.once.Do(func() {
		sharedRoot.Lock()
		if sharedRoot.dir == "" {
			sharedRoot.dir, r.err = os.MkdirTemp("", "gpuwatt-cli-shared-")
		}
		root := sharedRoot.dir
		sharedRoot.Unlock()
		if r.err != nil {
			return
		}
		dir, err := os.MkdirTemp(root, "run-")
		if err != nil {
			r.err = err
			return
		}
		r.out = filepath.Join(dir, "out")
		args := make([]string, len(r.args))
		for i, s := range r.args {
			args[i] = strings.ReplaceAll(s, "OUT", r.out)
		}
		// testApp's App, on a directory of the run's own rather than a test's TempDir
		// (the first test to ask may end before the last reads the files).
		var stdout, stderr bytes.Buffer
		a, ctx, cancel := virtualApp(dir, &stdout, &stderr)
		defer cancel()
		r.code = a.Main(ctx, args)
		r.stdout, r.stderr = stdout.Bytes(), stderr.Bytes()
	})
	if r.err != nil {
		t.Fatalf("shared run %v: %v", r.args, r.err)
	}
	return r.out, r.code, r.stdout, r.stderr
}
