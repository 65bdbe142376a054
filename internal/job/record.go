package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/measure"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// Recorder are the options of the background recorder (`gpuwatt job record`, started by
// begin).
type Recorder struct {
	Dir  string // the job's directory
	GPUs []gpu.Device
	// Channels are the names or globs of the channels to record (default RecordChannels).
	Channels []string
	// RAPLRoot is the powercap tree of the host's RAPL counters ("": the default; the
	// sim's own where it models a host), read every HostPoll; NoHost: none.
	RAPLRoot string
	NoHost   bool
	// Log gets the one line saying why the host's counters are not read.
	Log     io.Writer
	Poll    sensor.Options
	Version string
	Host    string
	Command []string
}

// DirCheck is how often the recorder checks that its job's directory is still there.
const DirCheck = time.Second

// waitEnd waits for ctx (end's SIGTERM) and returns "", or returns why the recording must
// stop without a trace: the job's directory was removed or replaced by another (its
// identity home, taken at the start), so that nothing saved there would reach an end.
func waitEnd(ctx context.Context, dir string, home os.FileInfo) string {
	tick := time.NewTicker(DirCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ""
		case <-tick.C:
			if st, err := os.Stat(dir); err != nil || !os.SameFile(st, home) {
				return fmt.Sprintf("the job's directory %s was removed or replaced while recording: stopping, with nothing to save (no end can find this recorder)", dir)
			}
		}
	}
}

// Run records the GPUs' RecordChannels until ctx is done (end's SIGTERM), then saves the
// trace into Dir (trace.csv, trace.json) and writes DoneFile. It writes ReadyFile once every
// channel has been read. Where Dir is removed or replaced meanwhile it stops, with an error.
func (o Recorder) Run(ctx context.Context, env device.Env) error {
	pats := o.Channels
	if len(pats) == 0 {
		pats = RecordChannels
	}
	var sensors []sensor.Sensor
	for _, d := range o.GPUs {
		for _, s := range d.Sensors() {
			if measure.MatchChannel(s.Channel().Name, pats) {
				sensors = append(sensors, s)
			}
		}
	}
	if len(sensors) == 0 {
		return fmt.Errorf("the job's GPUs have none of the channels %s", strings.Join(pats, ","))
	}
	if !o.NoHost {
		hs, err := device.HostSensors(env.System, o.RAPLRoot)
		if err != nil && o.Log != nil {
			fmt.Fprintf(o.Log, "gpuwatt job record: %v\n", err)
		}
		for _, h := range hs {
			sensors = append(sensors, sensor.Pace(h, HostPoll))
		}
	}
	home, err := os.Stat(o.Dir)
	if err != nil {
		return fmt.Errorf("the job's directory: %w", err)
	}
	clk := env.Clock
	smp := sensor.New(clk, sensors, o.Poll)
	if err := smp.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("sampler: %w", err)
	}
	if err := writeNew(filepath.Join(o.Dir, ReadyFile), []byte(strconv.Itoa(os.Getpid())+"\n")); err != nil {
		smp.Stop()
		return err
	}
	if why := waitEnd(ctx, o.Dir, home); why != "" {
		// Nothing could be saved and no end would find it: a recorder left running for ever
		// (recorders of test jobs whose directories were removed ran on for 30 minutes).
		smp.Stop()
		return errors.New(why)
	}
	// Every channel keeps being read until it has published an update after the job's end
	// (end read its counters before it signalled): 1.5 update periods of the slowest, at
	// most 1 s, as measure's tail.
	var guard time.Duration
	for _, ch := range smp.Channels() {
		if ch.GPU == trace.HostGPU {
			continue // end read the host's counters after the job's end itself
		}
		guard = max(guard, smp.UpdatePeriod(ch.GPU, ch.Name)*3/2)
	}
	_ = clk.Sleep(context.Background(), min(guard, time.Second))
	smp.Poke()
	chans, samples := smp.Stop()
	incomplete := ""
	if hung := smp.Hung(); len(hung) > 0 {
		incomplete = "a driver call hangs: " + strings.Join(hung, "; ")
	}
	_, stop := smp.Span()
	meta := trace.Meta{
		Format: trace.Format, Version: o.Version, Host: o.Host, Device: env.System.Name(), Simulated: env.System.Simulated(),
		DriverVersion: env.System.DriverVersion(), NVMLVersion: env.System.NVMLVersion(), Command: o.Command,
		Start: clk.Epoch(), Duration: stop.Seconds(), Poll: trace.Poll{Mode: o.Poll.String()}, Channels: chans,
		Unavailable: smp.Unavailable(), Incomplete: incomplete != "", IncompleteWhy: incomplete, VirtualClock: clock.IsVirtual(clk),
	}
	if !meta.VirtualClock {
		meta.SamplerCPUSecs = smp.CPUTime().Seconds()
	}
	for _, d := range o.GPUs {
		meta.GPUs = append(meta.GPUs, d.Info())
	}
	if err := trace.Save(o.Dir, &trace.Trace{Meta: meta, Samples: samples}); err != nil {
		return fmt.Errorf("saving the trace: %w", err)
	}
	return writeNew(filepath.Join(o.Dir, DoneFile), []byte(time.Now().UTC().Format(time.RFC3339Nano)+"\n"))
}
