package trace

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
)

// recordReader splits CSV text into records without allocating per field. It accepts
// RFC 4180 quoting (a quoted field may hold commas, doubled quotes and line breaks), trims
// blanks around fields (nvidia-smi writes ", "), skips blank lines and a leading byte order
// mark, and accepts LF or CRLF line ends. The fields it returns are valid until the next
// call.
type recordReader struct {
	br         *bufio.Reader
	line       int  // physical lines read so far
	start      int  // line on which the last record began
	terminated bool // whether the last record's line ended with a line break
	first      bool // no line read yet (strip a BOM)
	raw        []byte
	rec        []byte
	ends       []int
	fields     [][]byte

	in   *countingReader
	size int64 // the input's size where known (0: not known)
}

// countingReader counts the bytes read from r.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// consumed is how many bytes of the input the records read so far took.
func (r *recordReader) consumed() int64 { return r.in.n - int64(r.br.Buffered()) }

// inputSize is the size of the input r where it tells it (a file, a bytes.Reader or
// strings.Reader at its start), else 0.
func inputSize(r io.Reader) int64 {
	switch x := r.(type) {
	case interface{ Stat() (os.FileInfo, error) }:
		if fi, err := x.Stat(); err == nil && fi.Mode().IsRegular() {
			return fi.Size()
		}
	case interface{ Len() int }:
		return int64(x.Len())
	}
	return 0
}

// MaxLine is the longest line (and the longest record, quoted line breaks included) the
// readers accept: a trace's rows are tens of bytes, so a longer one is binary or endless
// input (/dev/zero), refused before it fills the memory.
const MaxLine = 1 << 20

func newRecordReader(r io.Reader) *recordReader {
	in := &countingReader{r: r}
	return &recordReader{br: bufio.NewReaderSize(in, 64<<10), first: true, in: in, size: inputSize(r)}
}

// readLine returns the next physical line without its terminator, and the terminator
// ("\n", "\r\n", or nil at the end of input). The line is valid until the next call.
func (r *recordReader) readLine() (line, term []byte, err error) {
	b, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		r.raw = append(r.raw[:0], b...)
		for err == bufio.ErrBufferFull {
			if bytes.IndexByte(b, 0) >= 0 {
				return nil, nil, lineErr(r.line+1, "holds a NUL byte: expected text (is this a binary file?)")
			}
			if len(r.raw) > MaxLine {
				return nil, nil, tooLong(r.line+1, r.raw)
			}
			b, err = r.br.ReadSlice('\n')
			r.raw = append(r.raw, b...)
		}
		b = r.raw
	}
	if err != nil && (err != io.EOF || len(b) == 0) {
		return nil, nil, err
	}
	r.line++
	if len(b) > MaxLine {
		return nil, nil, tooLong(r.line, b)
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return nil, nil, lineErr(r.line, "holds a NUL byte: expected text (is this a binary file?)")
	}
	if r.first {
		r.first = false
		b = bytes.TrimPrefix(b, []byte("\xEF\xBB\xBF"))
	}
	switch n := len(b); {
	case n >= 2 && b[n-2] == '\r' && b[n-1] == '\n':
		return b[:n-2], b[n-2:], nil
	case n >= 1 && b[n-1] == '\n':
		return b[:n-1], b[n-1:], nil
	}
	return b, nil, nil
}

// next returns the fields of the next record, or io.EOF.
func (r *recordReader) next() ([][]byte, error) {
	for {
		line, term, err := r.readLine()
		if err != nil {
			return nil, err
		}
		r.start = r.line
		if len(trimBlanks(line)) == 0 {
			continue
		}
		if bytes.IndexByte(line, '"') < 0 {
			r.terminated = term != nil
			r.fields = r.fields[:0]
			start := 0
			for i, c := range line {
				if c == ',' {
					r.fields = append(r.fields, trimBlanks(line[start:i]))
					start = i + 1
				}
			}
			r.fields = append(r.fields, trimBlanks(line[start:]))
			return r.fields, nil
		}
		return r.quoted(line, term)
	}
}

// quoted splits a record that holds a quote character, reading more lines while a quoted
// field is open.
func (r *recordReader) quoted(line, term []byte) ([][]byte, error) {
	r.rec, r.ends = r.rec[:0], r.ends[:0]
	i := 0
	for {
		for i < len(line) && isBlank(line[i]) {
			i++
		}
		if i < len(line) && line[i] == '"' {
			i++
			for {
				j := bytes.IndexByte(line[i:], '"')
				if j < 0 {
					r.rec = append(r.rec, line[i:]...)
					if term == nil {
						return nil, lineErr(r.start, "a quoted field is never closed: expected a closing \"")
					}
					r.rec = append(r.rec, term...)
					if len(r.rec) > MaxLine {
						return nil, tooLong(r.start, r.rec)
					}
					var err error
					line, term, err = r.readLine()
					if err == io.EOF {
						return nil, lineErr(r.start, "a quoted field is never closed: expected a closing \"")
					}
					if err != nil {
						return nil, err
					}
					i = 0
					continue
				}
				r.rec = append(r.rec, line[i:i+j]...)
				i += j + 1
				if i < len(line) && line[i] == '"' {
					r.rec = append(r.rec, '"')
					i++
					continue
				}
				break
			}
			for i < len(line) && isBlank(line[i]) {
				i++
			}
			r.ends = append(r.ends, len(r.rec))
			if i == len(line) {
				break
			}
			if line[i] != ',' {
				return nil, lineErr(r.start, "text after a quoted field: expected a comma")
			}
			i++
			continue
		}
		j := bytes.IndexByte(line[i:], ',')
		end := len(line)
		if j >= 0 {
			end = i + j
		}
		r.rec = append(r.rec, trimBlanks(line[i:end])...)
		r.ends = append(r.ends, len(r.rec))
		if j < 0 {
			break
		}
		i = end + 1
	}
	r.terminated = term != nil
	r.fields = r.fields[:0]
	prev := 0
	for _, e := range r.ends {
		r.fields = append(r.fields, r.rec[prev:e:e])
		prev = e
	}
	return r.fields, nil
}

// header reads the first record, skipping lines that start with '#', and returns its
// fields as strings. It returns io.EOF for an input without one.
func (r *recordReader) header() ([]string, error) {
	for {
		f, err := r.next()
		if err != nil {
			return nil, err
		}
		if len(f) > 0 && len(f[0]) > 0 && f[0][0] == '#' {
			continue
		}
		h := make([]string, len(f))
		for i, b := range f {
			h[i] = string(b)
		}
		return h, nil
	}
}

// tooLong is the error for a line (or record) beyond MaxLine, telling binary input from text.
func tooLong(line int, b []byte) *ParseError {
	what := "expected rows of a trace (is the input endless?)"
	if bytes.IndexByte(b, 0) >= 0 {
		what = "expected text (is this a binary file?)"
	}
	return lineErr(line, "is longer than %d MiB: %s", MaxLine>>20, what)
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

func trimBlanks(b []byte) []byte {
	for len(b) > 0 && isBlank(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isBlank(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// appendCell appends s to dst as one CSV field, quoted when it would not read back as is.
func appendCell(dst []byte, s string) []byte {
	if s == "" || !strings.ContainsAny(s, ",\"\r\n") && !isBlank(s[0]) && !isBlank(s[len(s)-1]) {
		return append(dst, s...)
	}
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, s[i])
	}
	return append(dst, '"')
}

var errEmpty = errors.New("empty input")
