// Package job measures the GPU energy of a batch job between a prolog and an epilog
// (`gpuwatt job begin` / `gpuwatt job end`, docs/slurm.md): the job's GPUs from
// SLURM_JOB_GPUS or CUDA_VISIBLE_DEVICES, their energy counters read at begin and end, a
// detached recorder of the counters and board power channels in between, and each GPU's
// energy over the job's span from internal/energy's one estimator with its 95 % interval.
//
// Every process of a job (begin, the recorder, end) opens the device on one time axis whose
// origin is the wall-clock time begin started (Begin.Start): the recorder's trace, begin's and
// end's counter readings and the job's span all lie on it.
package job

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/infile"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// Files in a job's directory.
const (
	BeginFile = "begin.json"     // what begin recorded (Begin)
	JobFile   = "job.json"       // the result (Result), written by end
	PIDFile   = "recorder.pid"   // the recorder's process id
	ReadyFile = "recorder.ready" // written by the recorder once every channel has been read
	DoneFile  = "recorder.done"  // written by the recorder once its trace is saved
	LogFile   = "recorder.log"   // the recorder's stderr
	// The recorder's trace: trace.csv and trace.json (trace.Save).
)

// Formats.
const (
	BeginFormat = "gpuwatt-job-begin/1"
	Format      = "gpuwatt-job/1"
)

// DefaultDir is where job directories are made (one per job id) unless --dir says otherwise.
const DefaultDir = "/var/lib/gpuwatt/jobs"

// RecordChannels are the channels the recorder records: the energy counter and the board
// power channels the estimator can use where the counter has too few readings (a short job).
var RecordChannels = []string{trace.ChEnergyTotal, trace.ChPowerSamples, trace.ChPowerInstant, trace.ChPowerUsage, trace.ChPowerAverage}

// Counter is one reading of a GPU's energy counter on the job's axis.
type Counter struct {
	T       float64 `json:"t_s"`
	EnergyJ float64 `json:"energy_j"`
}

// BeginGPU is one of the job's GPUs as begin saw it.
type BeginGPU struct {
	Index       int      `json:"index"`
	UUID        string   `json:"uuid"`
	Name        string   `json:"name"`
	PowerLimitW float64  `json:"power_limit_w,omitempty"`
	Counter     *Counter `json:"counter,omitempty"`
	// CounterError says why there is no counter reading.
	CounterError string `json:"counter_error,omitempty"`
}

// Job is what begin.json and job.json both say of the job: begin writes it, end copies it.
type Job struct {
	JobID     string    `json:"job_id"`
	User      string    `json:"user,omitempty"`
	Host      string    `json:"host"`
	Version   string    `json:"gpuwatt_version"`
	Device    string    `json:"device"`
	Simulated bool      `json:"simulated,omitempty"`
	Start     time.Time `json:"start"` // begin's wall-clock time of t_s = 0, the job's axis
}

// Begin is begin.json.
type Begin struct {
	Format string `json:"format"`
	Job
	// GPUsFrom says where the GPU list came from ("SLURM_JOB_GPUS=0,1", "--gpu 0").
	GPUsFrom string     `json:"gpus_from"`
	GPUs     []BeginGPU `json:"gpus"`
	// DeviceSpec and SimConfig are begin's --device and --sim-config (absolute): the
	// recorder and end open the same device.
	DeviceSpec  string `json:"device_spec"`
	SimConfig   string `json:"sim_config,omitempty"`
	RecorderPID int    `json:"recorder_pid,omitempty"`
	// RecorderError says why no recorder runs (it could not be started, or died at once).
	RecorderError string `json:"recorder_error,omitempty"`
	// SystemGPUs is how many GPUs the node has: the node's total needs the job to have
	// them all (the CPU and DRAM figures are the whole host's).
	SystemGPUs int `json:"system_gpus,omitempty"`
	// RAPLRoot is begin's --rapl-root ("" the default, "none": the host is not read): the
	// recorder and end read the same counters.
	RAPLRoot string `json:"rapl_root,omitempty"`
	// Host is begin's reading of the host's RAPL counters around the GPUs' (absent: a
	// gpuwatt that did not read them).
	HostReadings *HostReadings `json:"host_readings,omitempty"`
}

var jobIDRe = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// CheckJobID checks a job id (it names a directory): letters, digits, _ . - only.
func CheckJobID(id string) error {
	if !jobIDRe.MatchString(id) || id == "." || id == ".." {
		return fmt.Errorf("%w: job id %q: want Slurm's job id (digits; letters, _ . - allowed), from --job or SLURM_JOB_ID", status.ErrInput, id)
	}
	return nil
}

// GPUSpec is the list of the job's GPUs and where it came from: flag (--gpu) where given,
// else SLURM_JOB_GPUS, else CUDA_VISIBLE_DEVICES. No list at all is bad input.
func GPUSpec(flag string, getenv func(string) string) (spec, from string, err error) {
	if s := strings.TrimSpace(flag); s != "" {
		return s, "--gpu " + s, nil
	}
	for _, k := range []string{"SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES"} {
		if v, ok := lookup(getenv, k); ok {
			v = strings.TrimSpace(v)
			if v == "" || v == "NoDevFiles" || v == "-1" {
				return "", "", fmt.Errorf("%w: %s=%q names no GPU: the job has none (give --gpu to measure some anyway)", status.ErrInput, k, v)
			}
			return v, k + "=" + v, nil
		}
	}
	return "", "", fmt.Errorf("%w: no GPUs: neither SLURM_JOB_GPUS nor CUDA_VISIBLE_DEVICES is set (run in a Slurm prolog of a job with GPUs, or give --gpu 0,1)", status.ErrInput)
}

func lookup(getenv func(string) string, k string) (string, bool) {
	if getenv == nil {
		return os.LookupEnv(k)
	}
	v := getenv(k)
	return v, v != ""
}

// ResolveGPUs picks the devices named by spec: indices ("0,1") or UUIDs ("GPU-…", a unique
// prefix of at least 8 characters is enough), as Slurm and CUDA write them.
func ResolveGPUs(spec, from string, devs []gpu.Device) ([]gpu.Device, error) {
	var out []gpu.Device
	seen := map[int]bool{}
	for _, f := range strings.Split(spec, ",") {
		f = strings.TrimSpace(f)
		var d gpu.Device
		if i, err := strconv.Atoi(f); err == nil {
			if i < 0 || i >= len(devs) {
				return nil, fmt.Errorf("%w: %s: GPU %d: no such GPU (found %d: 0..%d)", status.ErrInput, from, i, len(devs), len(devs)-1)
			}
			d = devs[i]
		} else {
			if strings.HasPrefix(f, "MIG-") {
				return nil, fmt.Errorf("%w: %s: %s is a MIG instance: gpuwatt measures whole GPUs (their energy counter is the board's)", status.ErrInput, from, f)
			}
			if len(f) < 8 {
				return nil, fmt.Errorf("%w: %s: %q: want GPU indices (0,1) or UUIDs (GPU-…)", status.ErrInput, from, f)
			}
			var hits []gpu.Device
			for _, dv := range devs {
				if strings.HasPrefix(dv.Info().UUID, f) {
					hits = append(hits, dv)
				}
			}
			if len(hits) != 1 {
				return nil, fmt.Errorf("%w: %s: %q matches %d GPUs (want one)", status.ErrInput, from, f, len(hits))
			}
			d = hits[0]
		}
		if seen[d.Info().Index] {
			return nil, fmt.Errorf("%w: %s: GPU %d is named twice", status.ErrInput, from, d.Info().Index)
		}
		seen[d.Info().Index] = true
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b gpu.Device) int { return a.Info().Index - b.Info().Index })
	return out, nil
}

// ReadCounter reads a device's energy counter once, stamped on clk.
func ReadCounter(d gpu.Device, clk clock.Clock) (*Counter, error) {
	for _, s := range d.Sensors() {
		if s.Channel().Name != trace.ChEnergyTotal {
			continue
		}
		t0 := clk.Now()
		rs, err := s.Read(nil)
		t1 := clk.Now()
		if err != nil {
			return nil, err
		}
		if len(rs) == 0 {
			return nil, errors.New("the counter gave no reading")
		}
		r := rs[len(rs)-1]
		t := t0 + (t1-t0)/2
		if r.Timed {
			t = r.T
		}
		return &Counter{T: t.Seconds(), EnergyJ: r.Value}, nil
	}
	return nil, errors.New("the device has no energy counter")
}

// ReadBegin reads a job directory's begin.json. A missing one is bad input: end without begin.
func ReadBegin(dir string) (*Begin, error) {
	b, err := infile.ReadFile(filepath.Join(dir, BeginFile), infile.SmallLimit)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s: no %s: the job was not begun there (run `gpuwatt job begin` in the prolog, with the same --dir)", status.ErrInput, dir, BeginFile)
	}
	if err != nil {
		return nil, err
	}
	var bg Begin
	if err := json.Unmarshal(b, &bg); err != nil || bg.Format != BeginFormat {
		return nil, fmt.Errorf("%w: %s: not a %s record (%v)", status.ErrInput, filepath.Join(dir, BeginFile), BeginFormat, err)
	}
	return &bg, nil
}
