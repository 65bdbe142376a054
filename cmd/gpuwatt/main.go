// Command gpuwatt measures, corrects, profiles and benchmarks the power and energy of GPUs.
// See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/gpuwatt/gpuwatt/internal/cli"
)

func main() {
	// GPUWATT_CPUPROFILE=FILE writes a CPU profile of the whole run (any verb), for finding
	// where gpuwatt's own CPU goes on a real board (docs/sampling.md).
	stopProfile := func() {}
	if p := os.Getenv("GPUWATT_CPUPROFILE"); p != "" {
		var err error
		if stopProfile, err = startProfile(p); err != nil {
			fmt.Fprintf(os.Stderr, "gpuwatt: GPUWATT_CPUPROFILE: %v\n", err)
			stopProfile = func() {}
		}
	}
	if n := cli.RecorderProcs(os.Args[1:], os.Getenv, runtime.NumCPU()); n > 0 {
		runtime.GOMAXPROCS(n)
	}
	code := run()
	stopProfile() // before os.Exit, which runs no deferred calls
	os.Exit(code)
}

func run() int {
	ctx, stop := cli.SignalContext(context.Background())
	defer stop()
	return cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
}

func startProfile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
