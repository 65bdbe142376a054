package nvmlgpu

import (
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/gpuwatt/gpuwatt/internal/gpu"
)

// procState is where a Device's per-process utilisation reading left off.
type procState struct {
	mu       sync.Mutex
	lastSeen uint64 // µs since 1970: the newest sample returned so far
	comm     map[int]string
}

var _ gpu.ProcessLister = (*Device)(nil)

// Processes implements gpu.ProcessLister through nvmlDeviceGetProcessUtilization: the
// samples newer than those of the previous call (the first call: every sample the driver
// keeps), averaged per process; each process's command name from /proc/PID/comm (empty
// where this process cannot see it: another PID namespace).
func (d *Device) Processes() ([]gpu.ProcessUse, error) {
	p := &d.procs
	p.mu.Lock()
	defer p.mu.Unlock()
	samples, err := d.dev.ProcessUtilization(p.lastSeen)
	if err != nil {
		return nil, err
	}
	sum := map[int]float64{}
	n := map[int]int{}
	var order []int
	for _, s := range samples {
		if _, ok := n[s.PID]; !ok {
			order = append(order, s.PID)
		}
		sum[s.PID] += float64(s.SMUtil)
		n[s.PID]++
		p.lastSeen = max(p.lastSeen, s.TimeStampUS)
	}
	if p.comm == nil {
		p.comm = map[int]string{}
	}
	out := make([]gpu.ProcessUse, 0, len(order))
	for _, pid := range order {
		c, ok := p.comm[pid]
		if !ok {
			c = comm(pid)
			p.comm[pid] = c
		}
		out = append(out, gpu.ProcessUse{PID: pid, Comm: c, SMUtil: min(sum[pid]/float64(n[pid]), 100)})
	}
	if len(p.comm) > 4096 {
		p.comm = nil // pids are reused: forget the names now and then
	}
	return out, nil
}

func comm(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
