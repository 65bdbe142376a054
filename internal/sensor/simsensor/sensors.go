package simsensor

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"gpuwatt/internal/clock"
	"gpuwatt/internal/sensor"
	"gpuwatt/internal/sensormodel"
	"gpuwatt/internal/trace"
	"gpuwatt/internal/units"
)

// ErrNotSupported is the error of a channel that the simulated board lacks, as the real one
// does. Match it with errors.Is.
var ErrNotSupported = errors.New("not supported on this device")

// Scheduled is a channel that publishes values at update instants; tests use its truth
// accessors to count the updates a Sampler caught and to compare readings with the values
// the model published.
type Scheduled interface {
	sensor.Sensor
	sensor.PeriodHinter
	// Model is the channel's sensor model.
	Model() sensormodel.Model
	// UpdateTime is t_k, the instant of update k on the clock axis (k may be negative:
	// updates before the clock's origin).
	UpdateTime(k int) time.Duration
	// UpdateIndex is the index of the last update at or before t.
	UpdateIndex(t time.Duration) int
	// UpdateTimes lists the update instants in (t0, t1]; there are
	// UpdateIndex(t1) - UpdateIndex(t0) of them.
	UpdateTimes(t0, t1 time.Duration) []time.Duration
	// ValueAt is the value published at update k.
	ValueAt(k int) float64
}

var (
	_ Scheduled = (*Published)(nil)
	_ Scheduled = (*Buffered)(nil)
	_ Scheduled = (*Counter)(nil)

	_ sensor.PeriodHinter = (*Const)(nil)
	_ sensor.Sensor       = (*Unsupported)(nil)
)

// core is what every scheduled channel shares.
type core struct {
	clk    clock.Clock
	ch     trace.Channel
	load   *Load
	lag    *lagCache // nil without lag
	m      sensormodel.Model
	sched  schedule
	seed   uint64
	stream uint64
}

func newCore(clk clock.Clock, truth *Load, ch trace.Channel, m sensormodel.Model, seed uint64) core {
	if ch.Unit == "" {
		ch.Unit = ch.Quantity.Unit()
	}
	if ch.Description == "" {
		ch.Description = "sim: " + m.Describe(ch.Unit)
	}
	c := core{clk: clk, ch: ch, load: truth, m: m, seed: seed, stream: Stream(ch.GPU, ch.Name)}
	c.sched = newSchedule(m, seed, c.stream)
	if m.Tau > 0 {
		c.lag = truth.lag(m.Tau)
	}
	return c
}

// Channel implements sensor.Sensor.
func (c *core) Channel() trace.Channel { return c.ch }

// PeriodHint implements sensor.PeriodHinter: the model's period.
func (c *core) PeriodHint() time.Duration { return c.m.Period }

// Model returns the channel's sensor model.
func (c *core) Model() sensormodel.Model { return c.m }

// Truth returns the load the channel observes.
func (c *core) Truth() *Load { return c.load }

// UpdateTime returns t_k.
func (c *core) UpdateTime(k int) time.Duration { return c.sched.at(k) }

// UpdateIndex returns the index of the last update at or before t.
func (c *core) UpdateIndex(t time.Duration) int { return c.sched.index(t) }

// UpdateTimes returns the update instants in (t0, t1].
func (c *core) UpdateTimes(t0, t1 time.Duration) []time.Duration { return c.sched.times(t0, t1) }

// sampleValue is the published value of update k of a windowed channel.
func (c *core) sampleValue(k int) float64 {
	t := c.sched.at(k) - c.m.Delay
	v := c.m.Gain*c.load.sample(c.lag, t, c.m.Window) + float64(c.m.Offset)
	if c.m.Noise > 0 {
		v += float64(c.m.Noise) * gauss(c.seed, c.stream, k)
	}
	return publish(v, c.m.Quantum)
}

func publish(v float64, q units.Power) float64 {
	v = sensormodel.Quantise(v, float64(q))
	if v <= 0 {
		return 0 // also turns -0 into 0
	}
	return v
}

// cached holds the value of the update in force, so that reads between updates cost a
// clock read and a comparison.
type cached struct {
	mu        sync.Mutex
	have      bool
	gen       uint64
	cur, next time.Duration // t_k and t_{k+1}
	val       float64
}

// get returns the value in force at now, computing it with value when the update or the
// load changed.
func (cc *cached) get(c *core, now time.Duration, value func(int) float64) float64 {
	gen := c.load.Generation()
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if !cc.have || now < cc.cur || now >= cc.next || gen != cc.gen {
		k := c.sched.index(now)
		cc.cur, cc.next = c.sched.at(k), c.sched.at(k+1)
		cc.val = value(k)
		cc.gen, cc.have = gen, true
	}
	return cc.val
}

// Published is a channel that publishes a value at each update instant and repeats it
// until the next one, as nvmlDeviceGetPowerUsage and the power fields do.
type Published struct {
	core
	cache cached
}

// NewPublished returns a channel that reads truth through m on clk. The channel's unit
// defaults to its quantity's, and an empty description to the model's.
func NewPublished(clk clock.Clock, truth *Load, ch trace.Channel, m sensormodel.Model, seed uint64) (*Published, error) {
	if err := m.ValidateGenerating(); err != nil {
		return nil, fmt.Errorf("channel %s: %w", ch.Name, err)
	}
	return &Published{core: newCore(clk, truth, ch, m, seed)}, nil
}

// Read implements sensor.Sensor: the value of the last update at or before the clock's now.
func (p *Published) Read(dst []sensor.Reading) ([]sensor.Reading, error) {
	v := p.cache.get(&p.core, p.clk.Now(), p.sampleValue)
	return append(dst, sensor.Reading{Value: v}), nil
}

// ValueAt returns the value published at update k.
func (p *Published) ValueAt(k int) float64 { return p.sampleValue(k) }

// Buffered is a driver ring buffer of timestamped samples, as nvmlDeviceGetSamples: a
// sample every period, the last Ring of them kept. Read returns every sample newer than
// the newest one it returned before (on the first read, those at or after the clock's
// origin), with Timed set, T on the clock axis and DriverUS = Epoch + T in µs. Samples that
// fell out of the ring between two reads are lost, as on the real driver.
type Buffered struct {
	core
	ring int

	mu      sync.Mutex
	started bool
	last    int // index of the newest sample returned
}

// NewBuffered returns a buffered channel of ring samples.
func NewBuffered(clk clock.Clock, truth *Load, ch trace.Channel, m sensormodel.Model, seed uint64, ring int) (*Buffered, error) {
	if err := m.ValidateGenerating(); err != nil {
		return nil, fmt.Errorf("channel %s: %w", ch.Name, err)
	}
	if ring < 1 {
		return nil, fmt.Errorf("channel %s: ring: want >= 1 samples, got %d", ch.Name, ring)
	}
	ch.Buffered = true
	if ch.Description == "" {
		ch.Description = fmt.Sprintf("sim: ring of %d samples, ", ring) + m.Describe(unitOf(ch))
	}
	return &Buffered{core: newCore(clk, truth, ch, m, seed), ring: ring}, nil
}

func unitOf(ch trace.Channel) string {
	if ch.Unit != "" {
		return ch.Unit
	}
	return ch.Quantity.Unit()
}

// Ring returns the number of samples the buffer keeps.
func (b *Buffered) Ring() int { return b.ring }

// ValueAt returns the value of sample k.
func (b *Buffered) ValueAt(k int) float64 { return b.sampleValue(k) }

// Read implements sensor.Sensor.
func (b *Buffered) Read(dst []sensor.Reading) ([]sensor.Reading, error) {
	now := b.clk.Now()
	kNow := b.sched.index(now)
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.started {
		b.started = true
		b.last = b.sched.index(-1) // the first sample returned is the first at or after 0
	}
	lo := max(b.last+1, kNow-b.ring+1)
	epochUS := b.clk.Epoch().UnixMicro()
	for k := lo; k <= kNow; k++ {
		t := b.sched.at(k)
		dst = append(dst, sensor.Reading{
			Timed:    true,
			T:        t,
			Value:    b.sampleValue(k),
			DriverUS: epochUS + floorDiv64(t, time.Microsecond),
		})
	}
	b.last = max(b.last, kNow)
	return dst, nil
}

func floorDiv64(a, b time.Duration) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return int64(q)
}

// Counter is a cumulative energy counter, as nvmlDeviceGetTotalEnergyConsumption: at each
// update it publishes Start + Gain * (exact integral of the truth from the clock's origin to
// t_k - Delay) + Offset * (t_k - Delay), quantised to Quantum (1 mJ on NVIDIA boards), in
// joules. Window, Tau and Noise must be zero.
type Counter struct {
	core
	start units.Energy
	cache cached
}

// NewCounter returns an energy counter that reads start at the clock's origin.
func NewCounter(clk clock.Clock, truth *Load, ch trace.Channel, m sensormodel.Model, seed uint64, start units.Energy) (*Counter, error) {
	if err := m.ValidateCounter(); err != nil {
		return nil, fmt.Errorf("channel %s: %w", ch.Name, err)
	}
	ch.Cumulative = true
	if ch.Description == "" {
		ch.Description = "sim: exact integral of the true power, " + m.DescribeCounter()
	}
	return &Counter{core: newCore(clk, truth, ch, m, seed), start: start}, nil
}

// Start returns the counter's value at the clock's origin.
func (c *Counter) Start() units.Energy { return c.start }

// ValueAt returns the value published at update k.
func (c *Counter) ValueAt(k int) float64 {
	t := c.sched.at(k) - c.m.Delay
	e := float64(c.start) + c.m.Gain*float64(c.load.Energy(0, t)) + float64(c.m.Offset)*t.Seconds()
	return publish(e, c.m.Quantum)
}

// Read implements sensor.Sensor.
func (c *Counter) Read(dst []sensor.Reading) ([]sensor.Reading, error) {
	v := c.cache.get(&c.core, c.clk.Now(), c.ValueAt)
	return append(dst, sensor.Reading{Value: v}), nil
}

// Const is a channel whose value never changes (a power limit, say).
type Const struct {
	ch    trace.Channel
	value float64
	hint  time.Duration
}

// NewConst returns a constant channel; hint is its PeriodHint.
func NewConst(ch trace.Channel, value float64, hint time.Duration) *Const {
	if ch.Unit == "" {
		ch.Unit = ch.Quantity.Unit()
	}
	if ch.Description == "" {
		ch.Description = "sim: constant " + sensormodel.Quantity(value, ch.Unit)
	}
	return &Const{ch: ch, value: value, hint: hint}
}

// Channel implements sensor.Sensor.
func (c *Const) Channel() trace.Channel { return c.ch }

// Read implements sensor.Sensor.
func (c *Const) Read(dst []sensor.Reading) ([]sensor.Reading, error) {
	return append(dst, sensor.Reading{Value: c.value}), nil
}

// PeriodHint implements sensor.PeriodHinter.
func (c *Const) PeriodHint() time.Duration { return c.hint }

// Unsupported is a channel the board lacks: every Read fails with an error wrapping
// ErrNotSupported.
type Unsupported struct {
	ch trace.Channel
}

// NewUnsupported returns a channel that always fails.
func NewUnsupported(ch trace.Channel) *Unsupported {
	if ch.Unit == "" {
		ch.Unit = ch.Quantity.Unit()
	}
	if ch.Description == "" {
		ch.Description = "sim: not supported on this device"
	}
	return &Unsupported{ch: ch}
}

// Channel implements sensor.Sensor.
func (u *Unsupported) Channel() trace.Channel { return u.ch }

// Read implements sensor.Sensor: it always fails.
func (u *Unsupported) Read(dst []sensor.Reading) ([]sensor.Reading, error) {
	return dst, fmt.Errorf("sim %s: %w", u.ch.Name, ErrNotSupported)
}
