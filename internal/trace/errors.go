package trace

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ParseError reports bad input: where it is and what was expected, in one line such as
//
//	trace.csv line 17: t_s "abc" is not a number
type ParseError struct {
	Name   string // the input's name (a file path), "" when not known
	Line   int    // 1-based line number, 0 when the error is about the whole input
	Column string // the column's name in the header, "" when not about one column
	Msg    string // what was found and what was expected
}

func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString(e.Name)
	if e.Line > 0 {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("line ")
		b.WriteString(strconv.Itoa(e.Line))
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// lineErr returns a ParseError about a line.
func lineErr(line int, format string, args ...any) *ParseError {
	return &ParseError{Line: line, Msg: fmt.Sprintf(format, args...)}
}

// colErr returns a ParseError about one cell: "<column> "<value>" <what>".
func colErr(line int, col string, val []byte, what string) *ParseError {
	return &ParseError{Line: line, Column: col, Msg: fmt.Sprintf("%s %s %s", col, quoteCell(val), what)}
}

// quoteCell quotes a cell's text for a message, shortened when long.
func quoteCell(b []byte) string {
	const max = 40
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "..."
	}
	return strconv.Quote(string(b))
}

// named gives err the input's name: a ParseError gets it in its Name field, any other error
// is wrapped as "name: err".
func named(err error, name string) error {
	if err == nil || name == "" {
		return err
	}
	var pe *ParseError
	if errors.As(err, &pe) {
		if pe.Name == "" {
			pe.Name = name
		}
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}
