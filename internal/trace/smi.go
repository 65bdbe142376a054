package trace

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/status"
)

// SMITimeLayout is the layout of nvidia-smi's timestamp column (local time; a fractional
// second after the seconds is read too).
const SMITimeLayout = "2006/01/02 15:04:05"

// smiKind says how a column's values are read.
type smiKind int

const (
	smiPower  smiKind = iota // W (mW, kW accepted)
	smiClock                 // MHz unless the value or the header says otherwise
	smiTemp                  // degC
	smiUtil                  // %
	smiPState                // P0..P15
	smiMask                  // 0x... bit mask
)

// smiChannel maps an nvidia-smi query field to a trace channel.
type smiChannel struct {
	channel  string
	kind     smiKind
	priority int // when two fields map to one channel, the higher wins
	desc     string
}

var smiChannels = map[string]smiChannel{
	"power.draw": {ChPowerUsage, smiPower, 0,
		"nvidia-smi power.draw: board power draw; a 1 s average on Ampere and newer, instantaneous on older GPUs"},
	"power.draw.instant":   {ChPowerInstant, smiPower, 0, "nvidia-smi power.draw.instant: last measured instant board power draw"},
	"power.draw.average":   {ChPowerAverage, smiPower, 0, "nvidia-smi power.draw.average: last measured average board power draw"},
	"enforced.power.limit": {ChPowerLimit, smiPower, 1, "nvidia-smi enforced.power.limit: power limit in force"},
	"power.limit":          {ChPowerLimit, smiPower, 0, "nvidia-smi power.limit: software power limit"},
	"clocks.sm":            {ChClockSM, smiClock, 0, "nvidia-smi clocks.sm: current SM clock"},
	"clocks.current.sm":    {ChClockSM, smiClock, 0, "nvidia-smi clocks.current.sm: current SM clock"},
	"clocks.mem":           {ChClockMem, smiClock, 0, "nvidia-smi clocks.mem: current memory clock"},
	"clocks.current.memory": {ChClockMem, smiClock, 0,
		"nvidia-smi clocks.current.memory: current memory clock"},
	"clocks.gr":               {ChClockGr, smiClock, 0, "nvidia-smi clocks.gr: current graphics clock"},
	"clocks.current.graphics": {ChClockGr, smiClock, 0, "nvidia-smi clocks.current.graphics: current graphics clock"},
	"temperature.gpu":         {ChTempGPU, smiTemp, 0, "nvidia-smi temperature.gpu: core GPU temperature"},
	"temperature.memory":      {ChTempMem, smiTemp, 0, "nvidia-smi temperature.memory: HBM memory temperature"},
	"utilization.gpu": {ChUtilGPU, smiUtil, 0,
		"nvidia-smi utilization.gpu: percent of the past sample period during which a kernel was running"},
	"utilization.memory": {ChUtilMem, smiUtil, 0,
		"nvidia-smi utilization.memory: percent of the past sample period during which memory was read or written"},
	"pstate": {ChPState, smiPState, 0, "nvidia-smi pstate: performance state (0 = P0, maximum performance)"},
	"clocks_event_reasons.active": {ChThrottleReasons, smiMask, 0,
		"nvidia-smi clocks_event_reasons.active: bit mask of the reasons the clocks are held down"},
	"clocks_throttle_reasons.active": {ChThrottleReasons, smiMask, 0,
		"nvidia-smi clocks_throttle_reasons.active: bit mask of the reasons the clocks are held down"},
}

// smiInfo are nvidia-smi fields that describe the GPU rather than being sampled.
var smiInfo = map[string]bool{
	"timestamp": true, "index": true, "name": true, "uuid": true, "pci.bus_id": true,
	"driver_version": true, "power.default_limit": true, "serial": true, "count": true,
}

// smiFieldName returns the query field of a header cell: "power.draw [W]" → "power.draw".
func smiFieldName(h string) string {
	name, _, _ := strings.Cut(h, "[")
	return strings.ToLower(strings.TrimSpace(name))
}

// smiHeaderUnit returns the unit in brackets of a header cell, or "".
func smiHeaderUnit(h string) string {
	_, u, ok := strings.Cut(h, "[")
	if !ok {
		return ""
	}
	u, _, _ = strings.Cut(u, "]")
	return strings.TrimSpace(u)
}

func isSMIField(f string) bool {
	_, ok := smiChannels[f]
	return ok || smiInfo[f]
}

// ReadSMI reads a log written by nvidia-smi --query-gpu=timestamp,index,power.draw,...
// --format=csv (with or without nounits). Known fields become channels (power.draw →
// power.usage, power.draw.instant → power.instant, power.draw.average → power.average,
// clocks.sm → clock.sm in Hz, clocks.mem → clock.mem, clocks.gr → clock.gr,
// temperature.gpu → temp.gpu, temperature.memory → temp.mem, utilization.gpu → util.gpu,
// utilization.memory → util.mem, pstate → pstate, clocks_event_reasons.active →
// throttle.reasons, enforced.power.limit or power.limit → power.limit); other columns are
// ignored. Values in brackets ("[N/A]", "[Not Supported]") are skipped; a field that never
// has a value is listed in Meta.Unavailable. The GPU comes from the index column, else from
// the order of distinct pci.bus_id or uuid values. t_s counts from the first row's timestamp
// (local time), which becomes Meta.Start, to the µs. A last line cut short (a log copied while
// nvidia-smi was writing it) is dropped and the trace marked incomplete.
func ReadSMI(r io.Reader) (*Trace, error) {
	rr := newRecordReader(r)
	header, err := rr.header()
	if err == io.EOF {
		return nil, &ParseError{Msg: "empty file: expected an nvidia-smi --format=csv log with a header line"}
	}
	if err != nil {
		return nil, err
	}
	return readSMIRows(rr, header, rr.start, false)
}

// smiCol is a sampled column.
type smiCol struct {
	idx  int
	head string // as in the header, for messages
	unit string // from the header's brackets
	smiChannel
}

// smiGPU is what a log tells about one GPU.
type smiGPU struct {
	GPU
	limitSet, defaultSet bool
	seen                 map[string]bool   // channels with at least one value
	marker               map[string]string // first "[N/A]"-like marker of each channel
}

func readSMIRows(rr *recordReader, header []string, headerLine int, compact bool) (*Trace, error) {
	s := newSMIReader(rr, header, compact)
	if s.tsCol < 0 {
		return nil, &ParseError{Line: headerLine, Column: "timestamp",
			Msg: fmt.Sprintf("the nvidia-smi header lacks timestamp: expected --query-gpu=timestamp,index,power.draw,... (got %s)", shortHeader(header))}
	}
	for {
		f, err := rr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		line := rr.start
		if len(f) != len(header) {
			if !rr.terminated && len(f) < len(header) {
				s.meta.Incomplete = true
				s.meta.IncompleteWhy = fmt.Sprintf("the last line (%d) of the nvidia-smi log is cut short", line)
				break
			}
			return nil, lineErr(line, "%d fields, but the header has %d: expected one value per column", len(f), len(header))
		}
		if err := s.row(f, line); err != nil {
			return nil, err
		}
	}
	return s.finish()
}

// smiColumns is where an nvidia-smi header puts its fields (-1: absent).
type smiColumns struct {
	tsCol, indexCol, nameCol, uuidCol, busCol, drvCol, defLimCol int
	idColumn                                                     int // pci.bus_id, else uuid: names a GPU when there is no index
	cols                                                         []smiCol
}

// smiHeaderColumns finds the fields of header; of two columns for one channel the one of
// higher priority is read.
func smiHeaderColumns(header []string) smiColumns {
	c := smiColumns{-1, -1, -1, -1, -1, -1, -1, -1, nil}
	for i, h := range header {
		f := smiFieldName(h)
		switch f {
		case "timestamp":
			c.tsCol = i
		case "index":
			c.indexCol = i
		case "name":
			c.nameCol = i
		case "uuid":
			c.uuidCol = i
		case "pci.bus_id":
			c.busCol = i
		case "driver_version":
			c.drvCol = i
		case "power.default_limit":
			c.defLimCol = i
		}
		if m, ok := smiChannels[f]; ok {
			c.addChannel(smiCol{idx: i, head: h, unit: smiHeaderUnit(h), smiChannel: m})
		}
	}
	c.idColumn = c.busCol
	if c.idColumn < 0 {
		c.idColumn = c.uuidCol
	}
	return c
}

// addChannel adds col, or replaces the column of its channel when col's priority is higher.
func (c *smiColumns) addChannel(col smiCol) {
	dup := slices.IndexFunc(c.cols, func(x smiCol) bool { return x.channel == col.channel })
	switch {
	case dup < 0:
		c.cols = append(c.cols, col)
	case col.priority > c.cols[dup].priority:
		c.cols[dup] = col
	}
}

// smiReader is the state of reading an nvidia-smi log's rows.
type smiReader struct {
	smiColumns
	header []string
	start  time.Time
	haveT0 bool
	list   sampleList
	gpus   map[int]*smiGPU
	order  []int
	idOf   map[string]int // bus id or uuid → GPU when there is no index column
	tord   orderCheck
	lastTS time.Time
	meta   Meta
	warns  []status.Warning

	clockBack     int
	clockBackWarn status.Warning
	pos           polls
}

func newSMIReader(rr *recordReader, header []string, compact bool) *smiReader {
	return &smiReader{smiColumns: smiHeaderColumns(header), header: header, list: sampleList{compact: compact, rr: rr},
		gpus: map[int]*smiGPU{}, idOf: map[string]int{}}
}

// row reads one row of fields f (as many as the header's) at line.
func (s *smiReader) row(f [][]byte, line int) error {
	tb := f[s.tsCol]
	if len(tb) >= 9 && strings.EqualFold(string(tb[:9]), "timestamp") {
		return nil // a repeated header (logs appended to each other)
	}
	ts, t, err := s.rowTime(tb, line)
	if err != nil {
		return err
	}
	gpu, err := s.rowGPU(f, ts, line)
	if err != nil {
		return err
	}
	g := s.gpu(gpu, f)
	if s.drvCol >= 0 && s.meta.DriverVersion == "" && !isMarker(f[s.drvCol]) {
		s.meta.DriverVersion = string(f[s.drvCol])
	}
	if s.defLimCol >= 0 && !g.defaultSet && !isMarker(f[s.defLimCol]) {
		v, msg := smiValue(f[s.defLimCol], smiPower, smiHeaderUnit(s.header[s.defLimCol]))
		if msg != "" {
			return colErr(line, s.header[s.defLimCol], f[s.defLimCol], msg)
		}
		g.DefaultPowerLimit, g.defaultSet = v, true
	}
	return s.values(g, f, t, line)
}

// rowTime reads a row's timestamp tb: the instant, and t from the first row's, to the µs.
func (s *smiReader) rowTime(tb []byte, line int) (time.Time, time.Duration, error) {
	ts, ok := parseSMITime(string(tb))
	if !ok {
		return ts, 0, colErr(line, s.header[s.tsCol], tb, "is not a time: expected YYYY/MM/DD hh:mm:ss.sss as nvidia-smi writes it")
	}
	if s.haveT0 && ts.Before(s.lastTS) {
		// nvidia-smi writes local time without its zone: after a daylight-saving
		// fall-back, an hour of wall-clock times comes twice. Such a time is read as
		// the later of its two instants when the earlier would go back in time.
		if alt, ok := laterInstant(string(tb), ts, s.lastTS); ok {
			if s.clockBack == 0 {
				s.clockBackWarn = status.Warning{Code: CodeClockBack, Key: "dst",
					Message: fmt.Sprintf("line %d: the local time goes back from %s to %s, a daylight-saving change (nvidia-smi writes no zone): the rows from there on are read in %s",
						line, s.lastTS.In(smiLocation()).Format("2006/01/02 15:04:05.000 MST"), string(tb), zoneName(alt))}
			}
			s.clockBack++
			ts = alt
		}
	}
	if !s.haveT0 {
		s.start, s.haveT0 = ts, true
	}
	s.lastTS = ts
	t := ts.Sub(s.start)
	if lim := time.Duration(maxUS-1) * time.Microsecond; t > lim || t < -lim {
		return ts, 0, colErr(line, s.header[s.tsCol], tb, "is too far from the first row's time: expected a log of less than 290 years")
	}
	t = t.Round(time.Microsecond) // the resolution of gpuwatt's CSV; nvidia-smi writes ms
	s.tord.see(t, line)
	return ts, t, nil
}

// rowGPU is the GPU of a row at time ts: its index column, else the order of distinct bus
// ids or uuids, else its place among the rows of its time.
func (s *smiReader) rowGPU(f [][]byte, ts time.Time, line int) (int, error) {
	switch {
	case s.indexCol >= 0:
		g, ok := parseIndex(f[s.indexCol])
		if !ok {
			return 0, colErr(line, s.header[s.indexCol], f[s.indexCol], "is not a GPU index: expected a whole number ≥ 0")
		}
		return g, nil
	case s.idColumn >= 0:
		id := string(f[s.idColumn])
		g, ok := s.idOf[id]
		if !ok {
			g = len(s.idOf)
			s.idOf[id] = g
		}
		return g, nil
	default:
		// No column names the GPU: nvidia-smi writes each poll's GPUs one row each, in
		// index order, all with the poll's time. A row's GPU is its place among the
		// rows of its time; every poll must have as many (checked in finish).
		if ts.Equal(s.pos.ts) && s.pos.n > 0 {
			s.pos.n++
		} else {
			s.pos.close(line)
			s.pos.ts, s.pos.n, s.pos.line = ts, 1, line
		}
		return s.pos.n - 1, nil
	}
}

// gpu is GPU index gpu, described from the row f where it first appears.
func (s *smiReader) gpu(gpu int, f [][]byte) *smiGPU {
	if g := s.gpus[gpu]; g != nil {
		return g
	}
	g := &smiGPU{GPU: GPU{Index: gpu}, seen: map[string]bool{}, marker: map[string]string{}}
	s.gpus[gpu] = g
	s.order = append(s.order, gpu)
	if s.nameCol >= 0 && !isMarker(f[s.nameCol]) {
		g.Name = string(f[s.nameCol])
	}
	if s.uuidCol >= 0 && !isMarker(f[s.uuidCol]) {
		g.UUID = string(f[s.uuidCol])
	}
	if s.busCol >= 0 && !isMarker(f[s.busCol]) {
		g.PCIBusID = string(f[s.busCol])
	}
	return g
}

// values adds the sampled columns of row f of GPU g at t; a marker is remembered as why a
// channel may have no value.
func (s *smiReader) values(g *smiGPU, f [][]byte, t time.Duration, line int) error {
	for _, c := range s.cols {
		cell := f[c.idx]
		if isMarker(cell) {
			if _, ok := g.marker[c.channel]; !ok {
				g.marker[c.channel] = string(cell)
			}
			continue
		}
		v, msg := smiValue(cell, c.kind, c.unit)
		if msg == "" {
			// The bounds the CSV reader puts on the channel's quantity, so that whatever is
			// read here is read back from the CSV written of it (a clock of 1e17 MHz was
			// accepted here and written as 1e+23 Hz, which ReadCSV refused: FuzzReadSMI).
			msg = checkValue(QuantityOf(c.channel), v)
		}
		if msg != "" {
			return colErr(line, c.head, cell, msg)
		}
		s.list.add(Sample{T: t, GPU: g.Index, Channel: c.channel, Value: v})
		g.seen[c.channel] = true
		if c.channel == ChPowerLimit && !g.limitSet {
			g.PowerLimitW, g.limitSet = v, true
		}
	}
	return nil
}

// finish checks the polls of a log without a GPU column and makes the trace: its warnings,
// GPUs, channels and the channels that never had a value.
func (s *smiReader) finish() (*Trace, error) {
	if s.indexCol < 0 && s.idColumn < 0 {
		if !s.meta.Incomplete {
			s.pos.close(0)
		}
		if s.pos.err != "" {
			return nil, &ParseError{Line: s.pos.errLine, Msg: s.pos.err}
		}
		if s.pos.k > 1 {
			s.warns = append(s.warns, status.Warning{Code: CodeNoGPUColumn, Value: float64(s.pos.k), Unit: "GPUs",
				Message: fmt.Sprintf("no index, pci.bus_id or uuid column: each time has %d rows, read as GPUs 0 to %d in the order nvidia-smi writes them; add index to --query-gpu to name them", s.pos.k, s.pos.k-1)})
		}
	}
	tr := s.list.trace()
	if s.clockBack > 0 {
		s.clockBackWarn.Value, s.clockBackWarn.Unit = float64(s.clockBack), "rows"
		s.warns = append(s.warns, s.clockBackWarn)
	}
	if w, ok := s.tord.warning(); ok {
		tr.sortByTime()
		s.warns = append(s.warns, w)
	}
	meta := s.meta
	meta.Format = Format
	meta.SourceFormat = "nvidia-smi"
	meta.Start = s.start
	meta.Duration = tr.span()
	slices.Sort(s.order)
	for _, gi := range s.order {
		g := s.gpus[gi]
		meta.GPUs = append(meta.GPUs, g.GPU)
		for _, c := range s.cols {
			if !g.seen[c.channel] {
				why := "nvidia-smi gave no value"
				if m := g.marker[c.channel]; m != "" {
					why = "nvidia-smi gave " + m
				}
				meta.Unavailable = append(meta.Unavailable, Missing{GPU: gi, Name: c.channel, Reason: why})
				continue
			}
			ch := inferChannel(gi, c.channel, "", c.desc)
			ch.Source = "nvidia-smi --query-gpu=" + smiFieldName(c.head)
			meta.Channels = append(meta.Channels, ch)
		}
	}
	tr.Meta, tr.Warnings = meta, s.warns
	return tr, nil
}

// isMarker tells whether an nvidia-smi cell says there is no value: "[N/A]",
// "[Not Supported]", "[Unknown Error]", "N/A" and the like.
func isMarker(b []byte) bool {
	return len(b) == 0 || b[0] == '[' || string(b) == "N/A"
}

// smiZone is the zone of nvidia-smi's timestamps; nil means time.Local (tests set it).
var smiZone *time.Location

func smiLocation() *time.Location {
	if smiZone != nil {
		return smiZone
	}
	return time.Local
}

// laterInstant reads s, a local time that parsed as ts before last, as the other instant
// of an ambiguous wall-clock time (the second pass through the hour a daylight-saving
// fall-back repeats), when that instant is not before last and less than an hour after it.
func laterInstant(s string, ts, last time.Time) (time.Time, bool) {
	wall, err := time.ParseInLocation(SMITimeLayout, s, time.UTC)
	if err != nil {
		return time.Time{}, false // RFC 3339: it carries its zone
	}
	loc := smiLocation()
	_, cur := ts.In(loc).Zone()
	var best time.Time
	found := false
	for _, probe := range []time.Time{ts.Add(-12 * time.Hour), ts.Add(12 * time.Hour), last} {
		_, off := probe.In(loc).Zone()
		if off == cur {
			continue
		}
		cand := wall.Add(-time.Duration(off) * time.Second)
		if _, o := cand.In(loc).Zone(); o != off {
			continue // that wall-clock time does not exist at that offset
		}
		if cand.Before(last) || cand.Sub(last) >= time.Hour {
			continue
		}
		if !found || cand.Before(best) {
			best, found = cand, true
		}
	}
	return best, found
}

// zoneName names the zone of t in smiLocation: "EST (UTC-05:00)".
func zoneName(t time.Time) string {
	return t.In(smiLocation()).Format("MST (UTC-07:00)")
}

// parseSMITime reads nvidia-smi's timestamp (local time); RFC 3339 is accepted too.
func parseSMITime(s string) (time.Time, bool) {
	if t, err := time.ParseInLocation(SMITimeLayout, s, smiLocation()); err == nil {
		return t, true
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, true
	}
	return time.Time{}, false
}

// smiValue reads one sampled cell, such as "250.50 W", "1980 MHz", "45 %", "P0" or
// "0x0000000000000004", in the channel's unit. It returns a message saying what is wrong,
// or "".
func smiValue(b []byte, kind smiKind, headerUnit string) (float64, string) {
	s := string(b)
	switch kind {
	case smiPState:
		if len(s) >= 2 && (s[0] == 'P' || s[0] == 'p') {
			if n, ok := parseIndex(b[1:]); ok && n <= 31 {
				return float64(n), ""
			}
		}
		return 0, "is not a performance state: expected P0 to P15"
	case smiMask:
		n, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			return 0, "is not a bit mask: expected a hexadecimal number such as 0x0000000000000004"
		}
		return float64(n), ""
	}
	num, unit, _ := strings.Cut(s, " ")
	unit = strings.TrimSpace(unit)
	if unit == "" {
		unit = headerUnit
	}
	scale, want := 1.0, ""
	switch kind {
	case smiPower:
		want = "W"
		switch unit {
		case "", "W":
		case "mW":
			scale = 1e-3
		case "kW":
			scale = 1e3
		default:
			scale = 0
		}
	case smiClock:
		want = "MHz"
		switch unit {
		case "", "MHz":
			scale = 1e6
		case "GHz":
			scale = 1e9
		case "kHz":
			scale = 1e3
		case "Hz":
		default:
			scale = 0
		}
	case smiTemp:
		want = "degrees C"
		switch unit {
		case "", "C", "°C", "degC":
		default:
			scale = 0
		}
	case smiUtil:
		want = "%"
		if unit != "" && unit != "%" {
			scale = 0
		}
	}
	if scale == 0 {
		return 0, fmt.Sprintf("has unit %q: expected a number in %s", strings.Clone(unit), want)
	}
	v, msg := parseFinite(num)
	if msg != "" {
		return 0, msg + ": expected a number in " + want
	}
	if v *= scale; math.IsInf(v, 0) {
		return 0, "is out of range"
	}
	return v, ""
}

// polls checks, in a log without a GPU column, that every time has as many rows (one per
// GPU): rows that share a time are several GPUs' (a multi-GPU log without its index was
// read as one GPU, and the rows sharing a time dropped as half-done values); a log whose
// times have different numbers of rows cannot be told apart and is refused.
type polls struct {
	ts      time.Time
	n, line int // rows of the current time, and its first line
	k       int // rows per time, from the first
	err     string
	errLine int
}

// close ends the current time's rows (next is the line that starts the next; 0 at the end).
func (p *polls) close(next int) {
	if p.n == 0 || p.err != "" {
		return
	}
	if p.k == 0 {
		p.k = p.n
		return
	}
	if p.n != p.k && !(next == 0 && p.n < p.k) { // the last poll may be cut short
		p.errLine = p.line
		p.err = fmt.Sprintf("%d rows share the time of this line, where the times before had %d each: without an index, pci.bus_id or uuid column the GPUs of the rows cannot be told apart (add index to --query-gpu)", p.n, p.k)
	}
}
