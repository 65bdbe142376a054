package trace

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// CSVHeader is the header line of gpuwatt's trace CSV.
const CSVHeader = "t_s,gpu,channel,power_w,value,unit,driver_t_us"

// WriteCSV writes tr's samples as gpuwatt CSV (see CSVHeader): one row per sample in time
// order (stable for equal times); t_s with 6 decimals (to the µs, rounded to nearest);
// power_w only for power channels (same as value); value in the shortest form that reads
// back exactly; unit from the channel's metadata, or from its name's prefix when Meta has no
// such channel (see QuantityOf); driver_t_us empty when 0. A value that is NaN or infinite
// is an error, since it could not be read back.
func WriteCSV(w io.Writer, tr *Trace) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString(CSVHeader + "\n")

	samples := tr.Samples
	if !slices.IsSortedFunc(samples, cmpT) {
		samples = slices.Clone(samples)
		slices.SortStableFunc(samples, cmpT)
	}

	type chanOut struct {
		unit  string
		power bool
	}
	known := make(map[Key]chanOut, len(tr.Meta.Channels))
	for _, c := range tr.Meta.Channels {
		if _, dup := known[c.Key()]; !dup {
			known[c.Key()] = chanOut{channelUnit(c), channelQuantity(c) == QPower}
		}
	}
	var (
		lastKey Key
		last    chanOut
		have    bool
		buf     = make([]byte, 0, 128)
	)
	for i := range samples {
		s := &samples[i]
		if math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
			return fmt.Errorf("trace: sample at t=%v of gpu %d channel %q has value %v: expected a finite number",
				s.T, s.GPU, s.Channel, s.Value)
		}
		if !have || s.GPU != lastKey.GPU || s.Channel != lastKey.Name {
			lastKey = Key{s.GPU, s.Channel}
			c, ok := known[lastKey]
			if !ok {
				c = chanOut{QuantityOf(s.Channel).Unit(), QuantityOf(s.Channel) == QPower}
				known[lastKey] = c
			}
			last, have = c, true
		}
		buf = appendSeconds(buf[:0], s.T)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, int64(s.GPU), 10)
		buf = append(buf, ',')
		buf = appendCell(buf, s.Channel)
		buf = append(buf, ',')
		if last.power {
			buf = strconv.AppendFloat(buf, s.Value, 'g', -1, 64)
		}
		buf = append(buf, ',')
		buf = strconv.AppendFloat(buf, s.Value, 'g', -1, 64)
		buf = append(buf, ',')
		buf = appendCell(buf, last.unit)
		buf = append(buf, ',')
		if s.DriverUS != 0 {
			buf = strconv.AppendInt(buf, s.DriverUS, 10)
		}
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func cmpT(a, b Sample) int { return cmp.Compare(a.T, b.T) }

// StoredTime is d as trace.csv stores it: to the nearest µs (halves away from zero; within
// ±maxUS, so that it reads back).
func StoredTime(d time.Duration) time.Duration {
	return time.Duration(storedUS(d)) * time.Microsecond
}

// RoundToStored rounds every sample's time to what trace.csv stores (StoredTime), so that
// a figure computed on tr before Save is the one a reader of the saved trace computes (a
// sampler's nanoseconds moved the estimator's interval by parts in a million).
func (tr *Trace) RoundToStored() {
	for i := range tr.Samples {
		tr.Samples[i].T = StoredTime(tr.Samples[i].T)
	}
}

func storedUS(d time.Duration) int64 {
	us, r := int64(d/time.Microsecond), int64(d%time.Microsecond)
	if r >= 500 && us < maxUS {
		us++
	} else if r <= -500 && us > -maxUS {
		us--
	}
	return us
}

// appendSeconds appends d in seconds with 6 decimals, StoredTime's µs.
func appendSeconds(dst []byte, d time.Duration) []byte {
	us := storedUS(d)
	if us < 0 {
		dst = append(dst, '-')
		us = -us
	}
	dst = strconv.AppendInt(dst, us/1e6, 10)
	frac := us % 1e6
	dst = append(dst, '.',
		byte('0'+frac/100000), byte('0'+frac/10000%10), byte('0'+frac/1000%10),
		byte('0'+frac/100%10), byte('0'+frac/10%10), byte('0'+frac%10))
	return dst
}

// maxUS is the largest number of microseconds a time.Duration holds.
const maxUS = math.MaxInt64 / int64(time.Microsecond)

// parseSeconds reads a time in seconds, rounded to the nearest µs (the resolution of
// gpuwatt's CSV). It returns a message saying what is wrong, or "".
func parseSeconds(b []byte) (time.Duration, string) {
	// Fast and exact path: [+-]digits[.digits]
	i, neg := 0, false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		i++
	}
	var ip int64
	digits, ok := 0, true
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if ip > maxUS/1e6 {
			return 0, "is out of range"
		}
		ip = ip*10 + int64(b[i]-'0')
		digits++
	}
	var frac int64
	if i < len(b) && b[i] == '.' {
		i++
		n := 0
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			switch {
			case n < 6:
				frac = frac*10 + int64(b[i]-'0')
			case n == 6 && b[i] >= '5':
				frac++ // round the 7th decimal, half away from zero
			}
			n++
			digits++
		}
		for ; n < 6; n++ {
			frac *= 10
		}
	}
	if i != len(b) || digits == 0 {
		ok = false
	}
	if ok {
		if ip > maxUS/1e6 {
			return 0, "is out of range"
		}
		us := ip*1e6 + frac
		if us > maxUS {
			return 0, "is out of range"
		}
		if neg {
			us = -us
		}
		return time.Duration(us) * time.Microsecond, ""
	}
	// Anything else strconv reads (1e3, 0x1p-2).
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil && !isRange(err) {
		return 0, "is not a number"
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, "is not a finite number"
	}
	us := math.Round(f * 1e6)
	if math.Abs(us) > float64(maxUS) {
		return 0, "is out of range"
	}
	return time.Duration(us) * time.Microsecond, ""
}

func isRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// parseFinite reads a finite float64.
func parseFinite(s string) (float64, string) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if isRange(err) && !math.IsInf(f, 0) {
			return f, "" // underflow to (sub)normal or zero
		}
		if isRange(err) {
			return 0, "is out of range"
		}
		return 0, "is not a number"
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, "is not a finite number"
	}
	return f, ""
}

// parseFiniteBytes is parseFinite(string(b)), without the string for the usual
// [+-]digits[.digits] of at most 15 significant digits and 22 decimals: their value is
// the digits as a whole number (exact in a float64) divided by a power of ten (exact), one
// correctly rounded division: the float64 nearest the decimal, which is what ParseFloat
// gives (its own exact path is the same division).
func parseFiniteBytes(b []byte) (float64, string) {
	i, neg := 0, false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		i++
	}
	var m uint64
	nd, dec, intDigits := 0, 0, 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		m = m*10 + uint64(b[i]-'0')
		if m != 0 {
			nd++
		}
		intDigits++
	}
	if i < len(b) && b[i] == '.' && intDigits > 0 {
		i++
		j := i
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			m = m*10 + uint64(b[i]-'0')
			if m != 0 {
				nd++
			}
			dec++
		}
		if i == j {
			i = -1 // "5.": the slow path
		}
	}
	if i != len(b) || intDigits == 0 || nd > 15 || dec > 22 {
		return parseFinite(string(b))
	}
	f := float64(m)
	if neg {
		f = -f
	}
	if dec > 0 {
		f /= pow10[dec]
	}
	return f, ""
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseUint reads a whole number of 1 to 18 digits (no sign); ok is false otherwise.
func parseUint(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// parseIndex reads a small whole number ≥ 0.
func parseIndex(b []byte) (int, bool) {
	if string(b) == "-1" {
		return HostGPU, true // the host's channels (cpu.*)
	}
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// csvCols holds the index of each known column in a CSV header, -1 when absent.
type csvCols struct {
	t, gpu, channel, power, value, unit, driver int
	n                                           int // fields per row
	names                                       []string
}

// csvColumns finds the known columns of a header (names compared without case).
func csvColumns(header []string) (csvCols, error) {
	c := csvCols{t: -1, gpu: -1, channel: -1, power: -1, value: -1, unit: -1, driver: -1, n: len(header), names: header}
	for i, h := range header {
		var p *int
		switch strings.ToLower(h) {
		case "t_s":
			p = &c.t
		case "gpu":
			p = &c.gpu
		case "channel":
			p = &c.channel
		case "power_w":
			p = &c.power
		case "value":
			p = &c.value
		case "unit":
			p = &c.unit
		case "driver_t_us":
			p = &c.driver
		default:
			continue
		}
		if *p >= 0 {
			return c, &ParseError{Line: 1, Column: h, Msg: fmt.Sprintf("the header names %s twice: expected each column once", h)}
		}
		*p = i
	}
	var missing []string
	if c.t < 0 {
		missing = append(missing, "t_s")
	}
	if c.power < 0 {
		missing = append(missing, "power_w")
	}
	if len(missing) > 0 {
		return c, &ParseError{Line: 1, Column: missing[0], Msg: fmt.Sprintf("the header lacks %s: expected a CSV header naming t_s and power_w (got %s)",
			strings.Join(missing, " and "), shortHeader(header))}
	}
	return c, nil
}

func isGpuwattHeader(c csvCols) bool {
	return c.gpu >= 0 && c.channel >= 0 && c.value >= 0 && c.unit >= 0 && c.driver >= 0
}

func shortHeader(h []string) string {
	s := strings.Join(h, ",")
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return strconv.Quote(s)
}

// ReadCSV reads gpuwatt's trace CSV, or any CSV whose header names t_s (seconds) and
// power_w (watts), in any column order; other columns are ignored, a missing gpu column
// means GPU 0 and a missing channel column channel "power". Rows with neither power_w nor
// value are skipped. t_s is read to the µs. Samples come back sorted by time (stable).
// Meta.Channels and Meta.GPUs are rebuilt from the data (Load replaces them with the
// sidecar's when there is one). Errors are *ParseError values naming the line and column.
func ReadCSV(r io.Reader) (*Trace, error) {
	rr := newRecordReader(r)
	header, err := rr.header()
	if err == io.EOF {
		return nil, &ParseError{Msg: "empty file: expected a CSV header naming t_s and power_w"}
	}
	if err != nil {
		return nil, err
	}
	cols, err := csvColumns(header)
	if err != nil {
		err.(*ParseError).Line = rr.start
		return nil, err
	}
	return readCSVRows(rr, cols, false)
}

// defaultChannel is the channel of rows of a CSV without a channel column.
var defaultChannel = []byte(ChPower)

// csvChan is what ReadCSV learns about a channel.
type csvChan struct {
	gpu       int
	name      string
	unit      string
	unitLine  int
	firstLine int  // the line of the channel's first row
	powerOnly bool // some row gave power_w without value
}

func readCSVRows(rr *recordReader, c csvCols, compact bool) (*Trace, error) {
	r := csvReader{c: c, list: sampleList{compact: compact, rr: rr}, byName: map[string][]*csvChan{}}
	for {
		f, err := rr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		line := rr.start
		if !rr.terminated {
			// The last line has no line break: a file copied while it was written, cut
			// anywhere, a value perhaps mid-number. It is dropped, not read as a reading.
			r.cut = &status.Warning{Code: CodeTruncatedRow, Message: fmt.Sprintf("line %d, the last, has no line break: cut short while the file was written? It is dropped (a value cut mid-number would read as another)", line)}
			break
		}
		if len(f) != c.n {
			return nil, lineErr(line, "%d fields, but the header has %d: expected one value per column", len(f), c.n)
		}
		if err := r.row(f, line); err != nil {
			return nil, err
		}
	}
	return r.finish()
}

// csvReader is the state of reading a CSV trace's rows.
type csvReader struct {
	c      csvCols
	list   sampleList
	chans  []*csvChan
	byName map[string][]*csvChan
	order  orderCheck
	cur    *csvChan
	cut    *status.Warning
}

// row reads the fields f of one row at line; a row with neither power_w nor value is
// skipped.
func (r *csvReader) row(f [][]byte, line int) error {
	c := &r.c
	pw := f[c.power]
	var val []byte
	if c.value >= 0 {
		val = f[c.value]
	}
	if len(pw) == 0 && len(val) == 0 {
		return nil
	}
	s, name, err := c.sample(f, line, pw, val)
	if err != nil {
		return err
	}
	cur := r.channel(s.GPU, name, line)
	s.Channel = cur.name
	if len(val) == 0 {
		cur.powerOnly = true
	}
	if c.unit >= 0 {
		if err := cur.setUnit(f[c.unit], line, c.names[c.unit]); err != nil {
			return err
		}
	}
	if len(pw) == 0 {
		if msg := checkValue(cur.quantity(), s.Value); msg != "" {
			return colErr(line, c.names[c.value], val, msg)
		}
	}
	r.order.see(s.T, line)
	r.list.add(s)
	return nil
}

// sample reads a row's time, value (power_w, or value: the same number where both are
// given), GPU and driver time, and the channel's name.
func (c *csvCols) sample(f [][]byte, line int, pw, val []byte) (Sample, []byte, error) {
	var s Sample
	tb := f[c.t]
	if len(tb) == 0 {
		return s, nil, &ParseError{Line: line, Column: c.names[c.t], Msg: "t_s is empty: expected seconds since the trace's start"}
	}
	var msg string
	if s.T, msg = parseSeconds(tb); msg != "" {
		return s, nil, colErr(line, c.names[c.t], tb, msg)
	}
	if len(pw) > 0 {
		if s.Value, msg = parseFiniteBytes(pw); msg != "" {
			return s, nil, colErr(line, c.names[c.power], pw, msg)
		}
		if msg = checkValue(QPower, s.Value); msg != "" {
			return s, nil, colErr(line, c.names[c.power], pw, msg)
		}
	}
	if len(val) > 0 && !(len(pw) > 0 && bytes.Equal(pw, val)) {
		v, msg := parseFiniteBytes(val)
		if msg != "" {
			return s, nil, colErr(line, c.names[c.value], val, msg)
		}
		if len(pw) > 0 && v != s.Value {
			return s, nil, colErr(line, c.names[c.power], pw, fmt.Sprintf("differs from value %s: expected the same number or an empty power_w", quoteCell(val)))
		}
		s.Value = v
	}
	if c.gpu >= 0 && len(f[c.gpu]) > 0 {
		g, ok := parseIndex(f[c.gpu])
		if !ok {
			return s, nil, colErr(line, c.names[c.gpu], f[c.gpu], "is not a GPU index: expected a whole number ≥ 0 (or -1, the host)")
		}
		s.GPU = g
	}
	name := defaultChannel
	if c.channel >= 0 && len(f[c.channel]) > 0 {
		name = f[c.channel]
	}
	if s.GPU == HostGPU && !bytes.HasPrefix(name, []byte("cpu.")) {
		return s, nil, colErr(line, c.names[c.gpu], f[c.gpu], "is not a GPU index: expected a whole number ≥ 0 (-1, the host, is for cpu.* channels only)")
	}
	if c.driver >= 0 && len(f[c.driver]) > 0 {
		d, ok := parseUint(f[c.driver])
		var err error
		if !ok {
			d, err = strconv.ParseInt(string(f[c.driver]), 10, 64)
		}
		if err != nil {
			return s, nil, colErr(line, c.names[c.driver], f[c.driver], "is not a whole number of µs since 1970")
		}
		s.DriverUS = d
	}
	return s, name, nil
}

// channel finds the channel name of gpu, usually the same as some recent row's, or adds it.
func (r *csvReader) channel(gpu int, name []byte, line int) *csvChan {
	if r.cur != nil && r.cur.gpu == gpu && r.cur.name == string(name) {
		return r.cur
	}
	r.cur = nil
	candidates := r.chans // few channels: a scan beats hashing the name
	if len(r.chans) > 16 {
		candidates = r.byName[string(name)]
	}
	for _, ch := range candidates {
		if ch.gpu == gpu && ch.name == string(name) {
			r.cur = ch
			return ch
		}
	}
	r.cur = &csvChan{gpu: gpu, name: string(name), firstLine: line}
	r.chans = append(r.chans, r.cur)
	r.byName[r.cur.name] = append(r.byName[r.cur.name], r.cur)
	return r.cur
}

// setUnit records the channel's unit u from line (empty: none given); a channel has one.
func (ch *csvChan) setUnit(u []byte, line int, column string) error {
	switch {
	case len(u) == 0:
	case ch.unitLine == 0:
		ch.unit, ch.unitLine = string(u), line
	case ch.unit != string(u):
		return colErr(line, column, u, fmt.Sprintf("for gpu %d channel %q differs from %q on line %d: expected one unit per channel",
			ch.gpu, ch.name, ch.unit, ch.unitLine))
	}
	return nil
}

// quantity is what the channel measures: by its unit where given, else by its name.
func (ch *csvChan) quantity() Quantity {
	if ch.unit != "" {
		if qu := quantityOfUnit(ch.unit); qu != "" {
			return qu
		}
	}
	return QuantityOf(ch.name)
}

// finish makes the trace: rows checked again where a unit came late, warnings, and the
// channels and GPUs rebuilt from the data.
func (r *csvReader) finish() (*Trace, error) {
	tr := r.list.trace()
	if err := r.recheckUnits(tr); err != nil {
		return nil, err
	}
	if r.cut != nil {
		tr.Warnings = append(tr.Warnings, *r.cut)
	}
	if w, ok := r.order.warning(); ok {
		tr.sortByTime()
		tr.Warnings = append(tr.Warnings, w)
	}

	tr.Meta.Format = Format
	if !isGpuwattHeader(r.c) {
		tr.Meta.SourceFormat = "csv"
	}
	slices.SortStableFunc(r.chans, func(a, b *csvChan) int { return cmp.Compare(a.gpu, b.gpu) })
	for _, ch := range r.chans {
		d := inferChannel(ch.gpu, ch.name, ch.unit, "rebuilt from the CSV's data (no sidecar)")
		if d.Quantity == "" && ch.powerOnly {
			d.Quantity, d.Unit = QPower, QPower.Unit()
		}
		tr.Meta.Channels = append(tr.Meta.Channels, d)
		if n := len(tr.Meta.GPUs); n == 0 || tr.Meta.GPUs[n-1].Index != ch.gpu {
			tr.Meta.GPUs = append(tr.Meta.GPUs, GPU{Index: ch.gpu})
		}
	}
	tr.Meta.Duration = tr.span()
	return tr, nil
}

// recheckUnits checks again, by its unit, the rows of a channel whose unit is first given
// after some of them (those were checked by the channel's name).
func (r *csvReader) recheckUnits(tr *Trace) error {
	for _, ch := range r.chans {
		if ch.unitLine <= ch.firstLine {
			continue
		}
		q := quantityOfUnit(ch.unit)
		if q == "" || q == QuantityOf(ch.name) {
			continue
		}
		var bad *ParseError
		tr.each(Key{ch.gpu, ch.name}, func(x Sample) bool {
			if msg := checkValue(q, x.Value); msg != "" {
				bad = &ParseError{Line: ch.firstLine, Msg: fmt.Sprintf("gpu %d channel %q: the value %g at t = %s %s (its unit %s is given on line %d)",
					ch.gpu, ch.name, x.Value, units.FormatInstant(x.T.Seconds()), msg, ch.unit, ch.unitLine)}
			}
			return bad == nil
		})
		if bad != nil {
			return bad
		}
	}
	return nil
}

// duration is the time from the trace's origin (or its first sample, when that comes
// earlier) to its last sample.
func duration(s []Sample) float64 {
	if len(s) == 0 {
		return 0
	}
	return (s[len(s)-1].T - min(s[0].T, 0)).Seconds()
}

// sniff tells what kind of input a header belongs to.
type inputKind int

const (
	kindUnknown inputKind = iota
	kindCSV
	kindSMI
)

func sniff(header []string) inputKind {
	smi := false
	for _, h := range header {
		switch strings.ToLower(h) {
		case "t_s":
			return kindCSV
		}
		if isSMIField(smiFieldName(h)) {
			smi = true
		}
	}
	if smi {
		return kindSMI
	}
	return kindUnknown
}

// sampleList collects samples in blocks, so that a long read does not copy and clear an
// ever larger slice each time it grows.
type sampleList struct {
	full [][]Sample
	cur  []Sample

	// compact: the samples go to columns by channel instead (a compact trace)
	compact bool
	cols    []*column
	byKey   map[Key]*column // with many channels
	last    *column
	rr      *recordReader // the input, for the size of a column at the end (nil: not known)
}

// sizeAfter is how far the input must have been read before a column's share of it sizes
// the column.
const sizeAfter = 256 << 10

func (l *sampleList) add(s Sample) {
	if l.compact {
		c := l.last
		if c == nil || c.key.GPU != s.GPU || c.key.Name != s.Channel {
			c = l.column(Key{s.GPU, s.Channel})
			l.last = c
		}
		if len(c.t) == cap(c.t) && l.rr != nil && l.rr.size > 0 {
			// Full: grow it at once to the size its share of the input read so far gives
			// the whole input (and 2 % more), instead of by a quarter at a time, each step
			// leaving the last array's copy behind for the collector (a large trace's
			// columns took about twice their size at the peak of the read).
			if done := l.rr.consumed(); done >= sizeAfter && done < l.rr.size {
				want := int(float64(len(c.t))*float64(l.rr.size)/float64(done)*1.02) + 64
				c.reserve(want)
			}
		}
		c.add(s)
		return
	}
	if len(l.cur) == cap(l.cur) {
		l.grow()
	}
	l.cur = append(l.cur, s)
}

func (l *sampleList) grow() {
	if len(l.cur) > 0 {
		l.full = append(l.full, l.cur)
	}
	l.cur = make([]Sample, 0, min(2*cap(l.cur)+256, 1<<16))
}

// column returns the column of channel k, a new one the first time.
func (l *sampleList) column(k Key) *column {
	if l.byKey != nil {
		if c, ok := l.byKey[k]; ok {
			return c
		}
	} else {
		for _, c := range l.cols {
			if c.key == k {
				return c
			}
		}
	}
	c := &column{key: k}
	l.cols = append(l.cols, c)
	if l.byKey == nil && len(l.cols) > 16 {
		l.byKey = map[Key]*column{}
		for _, x := range l.cols {
			l.byKey[x.key] = x
		}
	} else if l.byKey != nil {
		l.byKey[k] = c
	}
	return c
}

// trace returns a trace holding the samples (as columns where compact), nothing else set.
func (l *sampleList) trace() *Trace {
	if l.compact {
		return &Trace{cols: append([]*column{}, l.cols...)}
	}
	return &Trace{Samples: l.slice()}
}

// slice returns all samples in one slice.
func (l *sampleList) slice() []Sample {
	if len(l.full) == 0 {
		return l.cur
	}
	n := len(l.cur)
	for _, c := range l.full {
		n += len(c)
	}
	all := make([]Sample, 0, n)
	for _, c := range l.full {
		all = append(all, c...)
	}
	return append(all, l.cur...)
}
