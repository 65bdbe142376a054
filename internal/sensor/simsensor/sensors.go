package simsensor

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
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
// until the next one, as nvmlDeviceGetPowerUsage and the power fields do; with Pairs, some
// updates come as two close together.
type Published struct {
	core
	cache cached
	pairs Pairs
}

// Pairs are a published channel's updates that come as two close together: before a share
// of its updates the driver publishes a half-done value a few ms early, as the H200's
// power.instant does before ~30 % of them (results/nvidia-h200/2026-11-21-sensor-run1:
// 183 of 600, a median 3 ms early, e.g. 0.57 then 0.90 of a step). The early value lies a
// fraction f of the way from the previous update's value to the update's own, f drawn
// uniformly in [0.3, 0.8]; it is published Lead × u early, u drawn in [0.5, 1.5]. Every draw
// is fixed by the seed.
type Pairs struct {
	Share float64       // pair_share: the share of updates preceded by an early value, 0 to 1
	Lead  time.Duration // pair_lead_s: the typical time from the early value to the update
}

// Validate checks p against the channel's update period.
func (p Pairs) Validate(period time.Duration) error {
	switch {
	case !(p.Share >= 0 && p.Share <= 1):
		return fmt.Errorf("pair_share: want 0 to 1, got %g", p.Share)
	case p.Lead < 0:
		return fmt.Errorf("pair_lead_s: want >= 0, got %g", p.Lead.Seconds())
	case p.Share > 0 && (p.Lead <= 0 || 3*p.Lead >= period/2):
		return fmt.Errorf("pair_lead_s: want > 0 and 1.5 × it below half the period (%g s), got %g", period.Seconds(), p.Lead.Seconds())
	}
	return nil
}

// SetPairs makes the channel publish pairs (Pairs). Call it before the channel is read.
func (p *Published) SetPairs(pairs Pairs) error {
	if err := pairs.Validate(p.m.Period); err != nil {
		return fmt.Errorf("channel %s: %w", p.ch.Name, err)
	}
	p.pairs = pairs
	return nil
}

// Early returns the early value published before update k, and when, or false if update
// k comes alone.
func (p *Published) Early(k int) (time.Duration, float64, bool) {
	if p.pairs.Share <= 0 || uniform(p.seed, p.stream, k, saltPair) >= p.pairs.Share {
		return 0, 0, false
	}
	lead := time.Duration(float64(p.pairs.Lead) * (0.5 + uniform(p.seed, p.stream, k, saltPairL)))
	f := 0.3 + 0.5*uniform(p.seed, p.stream, k, saltPairF)
	prev, next := p.sampleValue(k-1), p.sampleValue(k)
	return p.sched.at(k) - lead, publish(prev+f*(next-prev), p.m.Quantum), true
}

// NewPublished returns a channel that reads truth through m on clk. The channel's unit
// defaults to its quantity's, and an empty description to the model's.
func NewPublished(clk clock.Clock, truth *Load, ch trace.Channel, m sensormodel.Model, seed uint64) (*Published, error) {
	if err := m.ValidateGenerating(); err != nil {
		return nil, fmt.Errorf("channel %s: %w", ch.Name, err)
	}
	return &Published{core: newCore(clk, truth, ch, m, seed)}, nil
}

// Read implements sensor.Sensor: the value of the last update at or before the clock's now
// (or the early value of the next one, once it is out).
func (p *Published) Read(dst []sensor.Reading) ([]sensor.Reading, error) {
	now := p.clk.Now()
	if p.pairs.Share > 0 {
		if t, v, ok := p.Early(p.sched.index(now) + 1); ok && now >= t {
			return append(dst, sensor.Reading{Value: v}), nil
		}
	}
	v := p.cache.get(&p.core, now, p.sampleValue)
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
	ring   int
	stamps Stamps

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

// Stamps is how a buffered channel's driver stamps its samples: the value of every sample
// is the power at its grid instant, but a share of them carry a stamp off the grid, late by
// up to Late or (EarlyShare of those) early by up to Early, as the H200's
// nvmlDeviceGetSamples does (results/nvidia-h200/2026-11-21-sensor: 72–73.5 % of the stamps
// within 1 ms of a rigid 20 ms grid, the rest late by 2–14 ms or early by 3–6 ms). An
// off-grid offset lies between 2 ms (or half the bound, if less) and the bound: uniformly
// for early stamps, as lo + (Late − lo)·u³ for late ones (most a few ms late, a thin tail
// out to Late, which leaves the gap between the latest and the earliest stamps that the
// grid's fit needs, as on the H200); a sample is in the buffer from the later of its grid
// instant and its stamp. Every draw is fixed by the seed.
type Stamps struct {
	Share      float64       // off_grid: the share of samples stamped off the grid, 0 to 1
	Late       time.Duration // off_grid_late_s: the latest stamp after the grid instant
	Early      time.Duration // off_grid_early_s: the earliest stamp before it
	EarlyShare float64       // off_grid_early_share: the share of the off-grid stamps that are early
}

// Validate checks s against the channel's period: the stamps must stay in order.
func (s Stamps) Validate(period time.Duration) error {
	switch {
	case !(s.Share >= 0 && s.Share <= 1):
		return fmt.Errorf("off_grid: want 0 to 1, got %g", s.Share)
	case !(s.EarlyShare >= 0 && s.EarlyShare <= 1):
		return fmt.Errorf("off_grid_early_share: want 0 to 1, got %g", s.EarlyShare)
	case s.Late < 0 || s.Early < 0:
		return fmt.Errorf("off_grid_late_s, off_grid_early_s: want >= 0, got %g and %g", s.Late.Seconds(), s.Early.Seconds())
	case s.Late+s.Early > period:
		return fmt.Errorf("off_grid_late_s + off_grid_early_s: want at most the period (%g s) so that the stamps stay in order, got %g", period.Seconds(), (s.Late + s.Early).Seconds())
	}
	return nil
}

// SetStamps sets how the driver stamps the samples (Stamps). Call it before the channel
// is read.
func (b *Buffered) SetStamps(s Stamps) error {
	if err := s.Validate(b.m.Period); err != nil {
		return fmt.Errorf("channel %s: %w", b.ch.Name, err)
	}
	b.stamps = s
	return nil
}

// Stamp returns the driver's stamp of sample k (its grid instant is UpdateTime(k)).
func (b *Buffered) Stamp(k int) time.Duration {
	t := b.sched.at(k)
	s := b.stamps
	if s.Share <= 0 || uniform(b.seed, b.stream, k, saltStamp) >= s.Share {
		return t
	}
	bound, sign := s.Late, time.Duration(1)
	if uniform(b.seed, b.stream, k, saltStampE) < s.EarlyShare {
		bound, sign = s.Early, -1
	}
	lo := min(2*time.Millisecond, bound/2)
	u := uniform(b.seed, b.stream, k, saltStampV)
	if sign > 0 {
		u = u * u * u // most late stamps a few ms late, a thin tail out to Late
	}
	off := lo + time.Duration(u*float64(bound-lo))
	return t + sign*off
}

// lastIn is the index of the newest sample in the buffer at now.
func (b *Buffered) lastIn(now time.Duration) int {
	k := b.sched.index(now)
	if b.stamps.Share > 0 && b.Stamp(k) > now {
		k-- // stamped late: not out yet (the one before is, its stamp within a period of its instant)
	}
	return k
}

// Ring returns the number of samples the buffer keeps.
func (b *Buffered) Ring() int { return b.ring }

// ValueAt returns the value of sample k.
func (b *Buffered) ValueAt(k int) float64 { return b.sampleValue(k) }

// Read implements sensor.Sensor.
func (b *Buffered) Read(dst []sensor.Reading) ([]sensor.Reading, error) {
	now := b.clk.Now()
	kNow := b.lastIn(now)
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.started {
		b.started = true
		b.last = b.sched.index(-1) // the first sample returned is the first at or after 0
	}
	lo := max(b.last+1, kNow-b.ring+1)
	epochUS := b.clk.Epoch().UnixMicro()
	for k := lo; k <= kNow; k++ {
		t := b.Stamp(k)
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
