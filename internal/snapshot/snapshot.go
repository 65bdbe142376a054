// Package snapshot is what `gpuwatt serve` knows about each GPU at one instant: the
// exporters (Prometheus in internal/serve, OTLP in internal/otlpexport) read the same
// values from it, so a figure means the same thing on every path.
//
// Units are SI throughout (J, W, Hz, degC). A value that could not be read is absent
// (its Has flag false, or missing from its map or slice), never 0.
package snapshot

import "time"

// Source gives the current snapshot of every GPU it watches (the serve loop). It is safe to
// call from any goroutine; the returned slice and everything in it belong to the caller.
type Source interface {
	Snapshot() []GPU
}

// Energy sources: where EnergyJ comes from.
const (
	// SourceCounter: the board's own energy counter (nvmlDeviceGetTotalEnergyConsumption),
	// counted from when serve started.
	SourceCounter = "counter"
	// SourceCorrected: the integral of the corrected power (Corrected*), for boards without
	// a counter; it trails the present by CorrectedDelay.
	SourceCorrected = "corrected"
)

// GPU is one GPU at an instant.
type GPU struct {
	Index    int    // the driver's index (--gpu)
	UUID     string // GPU-...
	Model    string // the board's name, "NVIDIA H200"
	Hostname string
	At       time.Time // wall-clock time the snapshot was taken

	// Up is false while the GPU's driver calls fail (Reason says why); the other values
	// then keep what was last read.
	Up     bool
	Reason string

	// EnergyJ is the GPU's energy since serve started, monotonic: from the board's counter
	// where it has one (EnergySource SourceCounter), else the corrected integral
	// (SourceCorrected). EnergyChannel names the channel it is read from.
	EnergyJ       float64
	EnergySource  string
	EnergyChannel string
	// CounterJ is the board's raw energy counter (since the driver loaded), HasCounter
	// whether there is one: DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION is this in mJ.
	CounterJ   float64
	HasCounter bool

	// Power is the latest reading of each power channel (power.usage, power.instant,
	// power.samples, ...), in the order the device lists them.
	Power []ChannelPower
	// CorrectedW is the true power as the sensor model of CorrectedChannel inverted
	// (internal/correct) gives it: the mean over the last settled update period, which
	// ends CorrectedDelay before At (the inversion needs the readings after it).
	CorrectedW       float64
	HasCorrected     bool
	CorrectedChannel string
	CorrectedDelay   time.Duration

	// IdleW is the board's idle floor as estimated from the corrected readings so far
	// (the lowest settled level; it can only fall), HasIdle whether there is one yet.
	IdleW   float64
	HasIdle bool

	// Clocks (Hz) and temperatures (degC) by channel: "clock.sm", "clock.mem",
	// "clock.gr"; "temp.gpu", "temp.mem". Absent where not read.
	ClocksHz map[string]float64
	TempC    map[string]float64

	// ClockEvents is each known clock-event (throttle) reason and whether it is active now;
	// nil where the driver gave none.
	ClockEvents []ClockEvent

	// Processes is the per-process split of the energy (serve's documented split, see
	// docs/serve.md): each process's share of the energy above idle since serve saw it.
	Processes []Process
	// UnattributedJ is the energy since serve started that the split gave to no process:
	// the idle floor, and what was drawn above it while no process showed SM use.
	UnattributedJ float64

	// Health of the sampling of this GPU, cumulative since serve started.
	Polls  int64 // driver calls made
	Errors int64 // calls that failed
	Missed int64 // sensor updates that came and went between two polls
}

// ChannelPower is one power channel's latest reading.
type ChannelPower struct {
	Channel string // power.usage, power.instant, ...
	W       float64
	At      time.Time // when it was read (wall clock)
}

// ClockEvent is one clock-event reason ("sw_power_cap", "hw_slowdown", ...).
type ClockEvent struct {
	Reason string
	Active bool
}

// Process is one process's attributed energy on one GPU.
type Process struct {
	PID     int
	Comm    string  // the command name (/proc/PID/comm, or the driver's)
	EnergyJ float64 // attributed energy since serve first saw it, monotonic
	SMShare float64 // its latest share of the SM utilisation, 0..1
	// The Kubernetes pod and container it runs in (serve's Workloads); empty: not known.
	Namespace, Pod, Container, ContainerID string
}
