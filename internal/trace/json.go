package trace

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gpuwatt/gpuwatt/internal/atomicfile"
	"github.com/gpuwatt/gpuwatt/internal/infile"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// WriteMeta writes m as indented JSON (the trace's sidecar). Its format field is always
// Format, the layout this package writes, whatever m.Format says.
func WriteMeta(w io.Writer, m Meta) error {
	m.Format = Format
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("trace: encoding the sidecar: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ReadMeta reads a sidecar written by WriteMeta. It rejects one whose format is not
// Format.
func ReadMeta(r io.Reader) (Meta, error) {
	var m Meta
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		if err == io.EOF {
			return Meta{}, &ParseError{Msg: fmt.Sprintf("empty file: expected a gpuwatt trace sidecar (JSON with \"format\": %q)", Format)}
		}
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return Meta{}, &ParseError{Msg: fmt.Sprintf("not valid JSON at byte %d (%v): expected a gpuwatt trace sidecar", se.Offset, err)}
		case errors.As(err, &te):
			return Meta{}, &ParseError{Msg: fmt.Sprintf("field %q holds a JSON %s: expected %s, as in a gpuwatt trace sidecar", te.Field, te.Value, te.Type)}
		}
		return Meta{}, &ParseError{Msg: fmt.Sprintf("%v: expected a gpuwatt trace sidecar", err)}
	}
	switch {
	case m.Format == "":
		return Meta{}, &ParseError{Msg: fmt.Sprintf("no \"format\" field: expected a gpuwatt trace sidecar with \"format\": %q", Format)}
	case m.Format != Format:
		return Meta{}, &ParseError{Msg: fmt.Sprintf("format %q is not supported: this gpuwatt reads %q (was the trace written by another version?)", m.Format, Format)}
	}
	if err := checkMeta(m); err != nil {
		return Meta{}, err
	}
	return m, nil
}

// checkMeta refuses figures in a sidecar that no recording has, naming the field: each
// would reach a figure (an update period, a power limit) or overflow a time.
func checkMeta(m Meta) error {
	const (
		maxS     = 9e9 // s: a time.Duration holds ±292 years
		maxRateS = 1e6 // s: an update period, poll interval or call latency of under 12 days
	)
	bad := func(field string, v float64, want string) error {
		return &ParseError{Msg: fmt.Sprintf("field %q is %g: expected %s", field, v, want)}
	}
	in := func(v, lo, hi float64) bool { return v >= lo && v <= hi }
	if !in(m.Duration, 0, maxS) {
		return bad("duration_s", m.Duration, "seconds from 0 to 9e9")
	}
	if !in(m.Poll.Interval, 0, maxRateS) {
		return bad("poll.interval_s", m.Poll.Interval, "seconds from 0 to 1e6")
	}
	if !in(m.SamplerCPUSecs, 0, maxS) {
		return bad("sampler_cpu_s", m.SamplerCPUSecs, "seconds from 0 to 9e9")
	}
	for i, g := range m.GPUs {
		if !in(g.PowerLimitW, 0, MaxBoardPowerW) {
			return bad(fmt.Sprintf("gpus[%d].power_limit_w", i), g.PowerLimitW, fmt.Sprintf("0 to %d W", MaxBoardPowerW))
		}
		if !in(g.DefaultPowerLimit, 0, MaxBoardPowerW) {
			return bad(fmt.Sprintf("gpus[%d].default_power_limit_w", i), g.DefaultPowerLimit, fmt.Sprintf("0 to %d W", MaxBoardPowerW))
		}
		if !in(g.SamplerCPUSecs, 0, maxS) {
			return bad(fmt.Sprintf("gpus[%d].sampler_cpu_s", i), g.SamplerCPUSecs, "seconds from 0 to 9e9")
		}
	}
	for i, mk := range m.Marks {
		if !in(mk.T, -maxS, maxS) {
			return bad(fmt.Sprintf("marks[%d].t_s", i), mk.T, "seconds within ±9e9")
		}
	}
	for i, c := range m.Channels {
		st := c.Stats
		if st == nil {
			continue
		}
		for _, f := range []struct {
			name string
			v    float64
		}{{"update_period_s", st.UpdatePeriod}, {"poll_interval_s", st.PollInterval}, {"call_latency_s", st.CallLatency}} {
			if !in(f.v, 0, maxRateS) {
				return bad(fmt.Sprintf("channels[%d].stats.%s", i, f.name), f.v, "seconds from 0 to 1e6")
			}
		}
	}
	return nil
}

// Save writes tr into dir (created if needed) as trace.csv and trace.json. Each file is
// written to a temporary file in dir and renamed into place, so a reader never sees half a
// file. Times are stored to the µs (see WriteCSV).
func Save(dir string, tr *Trace) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, "trace.csv"), func(w io.Writer) error { return WriteCSV(w, tr) }); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, "trace.json"), func(w io.Writer) error { return WriteMeta(w, tr.Meta) })
}

// Read reads a trace from r, telling gpuwatt's CSV (or any CSV with t_s and power_w
// columns) from an nvidia-smi --format=csv log by the header. name (a file name) is used in
// error messages.
func Read(r io.Reader, name string) (*Trace, error) {
	tr, _, err := read(r, name, false)
	if err == nil {
		tr.crossCheck()
	}
	return tr, err
}

func read(r io.Reader, name string, compact bool) (*Trace, inputKind, error) {
	rr := newRecordReader(r)
	header, err := rr.header()
	if err == io.EOF {
		return nil, kindUnknown, named(&ParseError{Msg: "empty file: " + expectedInput}, name)
	}
	if err != nil {
		return nil, kindUnknown, named(err, name)
	}
	var tr *Trace
	switch kind := sniff(header); kind {
	case kindCSV:
		cols, err := csvColumns(header)
		if err != nil {
			err.(*ParseError).Line = rr.start
			return nil, kind, named(err, name)
		}
		tr, err = readCSVRows(rr, cols, compact)
		return tr, kind, named(err, name)
	case kindSMI:
		tr, err = readSMIRows(rr, header, rr.start, compact)
		return tr, kind, named(err, name)
	}
	return nil, kindUnknown, named(&ParseError{Line: rr.start,
		Msg: fmt.Sprintf("unknown format (header %s): %s", shortHeader(header), expectedInput)}, name)
}

const expectedInput = "expected gpuwatt's trace CSV, a CSV whose header names t_s and power_w, " +
	"or an nvidia-smi --query-gpu=timestamp,... --format=csv log"

// Load reads a trace from path, which is one of
//
//   - a directory holding trace.csv and trace.json (written by Save; without trace.json
//     the metadata is rebuilt);
//   - a CSV file, with its sidecar when one sits beside it (x.csv → x.json);
//   - a sidecar (x.json), with the CSV beside it (x.csv);
//   - an nvidia-smi --format=csv log, told by its header.
//
// Without a sidecar, the metadata is rebuilt from the data. Channels found in the data but
// not described by the sidecar are added to Meta.Channels, described from their names.
func Load(path string) (*Trace, error) { return load(path, false) }

func load(path string, compact bool) (*Trace, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	csvPath, metaPath := path, ""
	switch ext := filepath.Ext(path); {
	case fi.IsDir():
		csvPath, metaPath = filepath.Join(path, "trace.csv"), filepath.Join(path, "trace.json")
		if csvPath = orGzip(csvPath); csvPath == "" {
			return nil, fmt.Errorf("%s: not a trace directory: expected trace.csv (or trace.csv.gz) and trace.json in it", path)
		}
	case strings.EqualFold(ext, ".json"):
		csvPath, metaPath = strings.TrimSuffix(path, ext)+".csv", path
		if c := orGzip(csvPath); c != "" {
			csvPath = c
		} else {
			return nil, fmt.Errorf("%s: a sidecar without its CSV: expected %s beside it", path, filepath.Base(csvPath))
		}
	case strings.EqualFold(ext, ".gz"):
		base := strings.TrimSuffix(path, ext)
		metaPath = strings.TrimSuffix(base, filepath.Ext(base)) + ".json"
	default:
		metaPath = strings.TrimSuffix(path, ext) + ".json"
	}

	f, err := infile.Open(csvPath, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var in io.Reader = f
	if strings.EqualFold(filepath.Ext(csvPath), ".gz") {
		// The results under results/ keep their traces gzipped: read them as they are.
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", csvPath, err)
		}
		defer zr.Close()
		in = zr
	}
	tr, kind, err := read(in, csvPath, compact)
	if err != nil {
		return nil, err
	}
	if kind != kindCSV {
		tr.crossCheck()
		return tr, nil
	}
	mf, err := infile.Open(metaPath, false)
	if errors.Is(err, fs.ErrNotExist) {
		tr.crossCheck()
		return tr, nil
	}
	if err != nil {
		return nil, err
	}
	defer mf.Close()
	mb, err := infile.ReadAll(mf, metaPath, infile.JSONLimit)
	if err != nil {
		return nil, err
	}
	meta, err := ReadMeta(bytes.NewReader(mb))
	if err != nil {
		return nil, named(err, metaPath)
	}
	rebuilt := tr.Meta
	tr.Meta = meta
	for _, c := range rebuilt.Channels {
		if _, ok := tr.Channel(c.GPU, c.Name); !ok {
			c.Description = "found in the CSV but not described by its sidecar"
			tr.Meta.Channels = append(tr.Meta.Channels, c)
		}
	}
	if len(tr.Meta.GPUs) == 0 {
		tr.Meta.GPUs = rebuilt.GPUs
	}
	if err := tr.checkQuantities(); err != nil {
		return nil, named(err, metaPath)
	}
	tr.crossCheck()
	return tr, nil
}

// orGzip returns path where it exists, else path+".gz" where that exists, else "".
func orGzip(path string) string {
	for _, p := range []string{path, path + ".gz"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}
