// Command gpuwatt measures, corrects, profiles and benchmarks the power and energy of GPUs.
// See README.md.
package main

import (
	"context"
	"os"

	"github.com/gpuwatt/gpuwatt/internal/cli"
)

func main() {
	ctx, stop := cli.SignalContext(context.Background())
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
