// Package pbwire reads a protobuf message field by field, over
// google.golang.org/protobuf/encoding/protowire, for gpuwatt's few hand-written decoders (the
// OTLP test receiver, an OTLP collector's answer, the kubelet's pod-resources answer): they
// replace generated types whose modules (the OpenTelemetry SDK and OTLP protos, gRPC,
// k8s.io/kubelet) made 143 of the 218 third-party packages of the tests' build
// (results/dev-vm/2026-11-28-test-timing-4-deps). A field of a known number with
// the wrong wire type is an error, as in the generated decoders; unknown fields are
// skipped, as they are there.
package pbwire

import (
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field is one field of a message: Bytes for a length-delimited one, Num for the others
// (a varint, or a fixed32 or fixed64's bits).
type Field struct {
	Num   protowire.Number
	Type  protowire.Type
	Int   uint64
	Bytes []byte
}

// Each calls fn with every field of msg in order; it stops at fn's first error, or at
// bytes that are not a protobuf message.
func Each(msg []byte, fn func(Field) error) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return protowire.ParseError(n)
		}
		msg = msg[n:]
		f := Field{Num: num, Type: typ}
		switch typ {
		case protowire.VarintType:
			f.Int, n = protowire.ConsumeVarint(msg)
		case protowire.Fixed64Type:
			f.Int, n = protowire.ConsumeFixed64(msg)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(msg)
			f.Int = uint64(v)
		case protowire.BytesType:
			f.Bytes, n = protowire.ConsumeBytes(msg)
		default:
			n = protowire.ConsumeFieldValue(num, typ, msg)
		}
		if n < 0 {
			return fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
		}
		msg = msg[n:]
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

func (f Field) want(t protowire.Type) error {
	if f.Type != t {
		return fmt.Errorf("field %d: wire type %d, want %d", f.Num, f.Type, t)
	}
	return nil
}

// String is a string (or bytes, or message) field's content.
func (f Field) String() (string, error) {
	b, err := f.Message()
	return string(b), err
}

// Message is a length-delimited field's content.
func (f Field) Message() ([]byte, error) {
	return f.Bytes, f.want(protowire.BytesType)
}

// Varint is a varint field's value (int64, uint64, enum and bool fields are varints).
func (f Field) Varint() (uint64, error) {
	return f.Int, f.want(protowire.VarintType)
}

// Fixed64 is a fixed64 field's bits.
func (f Field) Fixed64() (uint64, error) {
	return f.Int, f.want(protowire.Fixed64Type)
}

// Double is a double field's value.
func (f Field) Double() (float64, error) {
	v, err := f.Fixed64()
	return math.Float64frombits(v), err
}
