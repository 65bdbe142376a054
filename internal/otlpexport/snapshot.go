package otlpexport

import "github.com/gpuwatt/gpuwatt/internal/snapshot"

// FromSnapshot turns serve's snapshot into the GPUs to push: hw.energy is EnergyJ (the
// board's counter since serve started, or the corrected integral: gpuwatt.energy.source
// says which, gpuwatt.energy.corrected is true for the second), hw.power the corrected
// power where there is one. A GPU that is down is left out of the push (its last values
// would pass for current); one without any energy source yet too.
func FromSnapshot(s []snapshot.GPU) []GPU {
	out := make([]GPU, 0, len(s))
	for _, g := range s {
		if !g.Up || g.EnergySource == "" {
			continue
		}
		out = append(out, GPU{
			Index: g.Index, UUID: g.UUID, Model: g.Model,
			EnergyJ: g.EnergyJ, Source: g.EnergySource, Corrected: g.EnergySource == snapshot.SourceCorrected,
			PowerW: g.CorrectedW, HasPower: g.HasCorrected,
		})
	}
	return out
}
