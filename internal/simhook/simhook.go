// Package simhook lets the public root package open the public sim package's system
// without either exposing the internal types: package sim sets Of in its init, and
// package gpuwatt (which imports sim) calls it.
package simhook

import (
	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
)

// Of returns the system and virtual clock behind a *sim.System (false for anything else).
var Of func(v any) (gpu.System, *clock.Virtual, bool)
