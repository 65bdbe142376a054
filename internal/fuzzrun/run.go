package fuzzrun

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Target is one fuzz function: its package's directory (relative to the module root) and
// its name.
type Target struct {
	Dir, Name string
}

func (t Target) String() string { return "./" + filepath.ToSlash(t.Dir) + " " + t.Name }

// Targets finds every fuzz function (func FuzzX(f *testing.F) in a _test.go file) under
// root, skipping testdata and hidden directories, in a stable order: a new target is run
// without being listed anywhere.
func Targets(root string) ([]Target, error) {
	var ts []Target
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && isFuzzName(fn.Name.Name) && takesF(fn) {
				ts = append(ts, Target{Dir: rel, Name: fn.Name.Name})
			}
		}
		return nil
	})
	sort.Slice(ts, func(i, j int) bool {
		if ts[i].Dir != ts[j].Dir {
			return ts[i].Dir < ts[j].Dir
		}
		return ts[i].Name < ts[j].Name
	})
	return ts, err
}

func isFuzzName(n string) bool {
	return strings.HasPrefix(n, "Fuzz") && (len(n) == 4 || !('a' <= n[4] && n[4] <= 'z'))
}

// takesF: the one parameter is *testing.F.
func takesF(fn *ast.FuncDecl) bool {
	ps := fn.Type.Params.List
	if len(ps) != 1 || len(ps[0].Names) > 1 {
		return false
	}
	st, ok := ps[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := st.X.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "F"
}

// Options of Run.
type Options struct {
	// Fuzz is how long to fuzz before stopping at the first moment no input is being
	// minimised; Grace how much longer to wait for that moment (past it: not a pass).
	Fuzz, Grace time.Duration
	// Minimise bounds each minimisation (-fuzzminimizetime): well under Fuzz, so that the
	// target is fuzzed, not only its seeds minimised.
	Minimise time.Duration
	// Parallel is the number of fuzzing workers (default 2).
	Parallel int
	// CacheDir is the fuzzer's corpus cache (-test.fuzzcachedir); "" keeps Go's own.
	CacheDir string
	// Log, where set, gets every line of the run's output.
	Log io.Writer
}

// Result of one target's run.
type Result struct {
	Target  Target
	Execs   int64
	Elapsed time.Duration
	Err     error // nil: a pass
	Monitor *Monitor
}

// Build compiles the test binary of the package in dir (relative to root) into out.
func Build(ctx context.Context, root, dir, out string) error {
	cmd := exec.CommandContext(ctx, "go", "test", "-c", "-o", out, "./"+filepath.ToSlash(dir))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go test -c ./%s: %v\n%s", dir, err, b)
	}
	return nil
}

// Run fuzzes t with the test binary bin (Build's) in the package's directory: it runs
// for o.Fuzz, is then stopped (SIGINT, as a user's Ctrl-C) at the first moment no input
// is being minimised, and is judged by its log (Monitor.Verdict). Where no such moment
// comes within o.Grace the run is killed and not a pass.
func Run(ctx context.Context, root string, t Target, bin string, o Options) Result {
	if o.Parallel <= 0 {
		o.Parallel = 2
	}
	res := Result{Target: t, Monitor: &Monitor{}}
	args := []string{"-test.run=^$", "-test.fuzz=^" + t.Name + "$",
		// The fuzzer's own deadline only as a backstop: Run stops it.
		fmt.Sprintf("-test.fuzztime=%s", o.Fuzz+o.Grace+time.Minute),
		fmt.Sprintf("-test.fuzzminimizetime=%s", o.Minimise),
		fmt.Sprintf("-test.parallel=%d", o.Parallel), "-test.timeout=0"}
	if o.CacheDir != "" {
		args = append(args, "-test.fuzzcachedir="+o.CacheDir)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = filepath.Join(root, t.Dir)
	cmd.Env = append(os.Environ(), "GODEBUG="+godebug())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	start := time.Now()
	if err := cmd.Start(); err != nil {
		res.Err = err
		return res
	}
	var mu sync.Mutex
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			mu.Lock()
			res.Monitor.Line(sc.Text())
			mu.Unlock()
			if o.Log != nil {
				fmt.Fprintln(o.Log, sc.Text())
			}
		}
		io.Copy(io.Discard, pr) // a line too long: keep the pipe flowing
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); pw.Close() }()

	var waitErr error
	stopped, killed := false, false
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
loop:
	for {
		select {
		case waitErr = <-exited:
			break loop
		case <-ctx.Done():
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			killed = true
		case <-tick.C:
			el := time.Since(start)
			mu.Lock()
			quiet := res.Monitor.Quiet()
			mu.Unlock()
			switch {
			case !stopped && el >= o.Fuzz && quiet:
				cmd.Process.Signal(os.Interrupt)
				stopped = true
			case !killed && el >= o.Fuzz+o.Grace+30*time.Second:
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // not even a SIGINT ended it
				killed = true
			case !stopped && el >= o.Fuzz+o.Grace:
				cmd.Process.Signal(os.Interrupt)
				stopped = true
			}
		}
	}
	<-read
	res.Elapsed = time.Since(start)
	res.Execs = res.Monitor.Execs
	code := 0
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		code = ee.ExitCode()
	} else if waitErr != nil {
		code = -1
	}
	res.Err = res.Monitor.Verdict(code)
	if res.Err == nil && (killed || ctx.Err() != nil) {
		res.Err = fmt.Errorf("killed after %s: not a pass", res.Elapsed.Round(time.Second))
	}
	return res
}

// godebug adds fuzzdebug=1 (the minimisation log Monitor reads) to the GODEBUG set.
func godebug() string {
	if g := os.Getenv("GODEBUG"); g != "" {
		return g + ",fuzzdebug=1"
	}
	return "fuzzdebug=1"
}
