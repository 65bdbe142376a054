package pbwire

import (
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// TestEach reads every wire type in order, with the values they were written with, and
// a field read as the wrong type is an error naming it.
func TestEach(t *testing.T) {
	var b []byte
	b = protowire.AppendVarint(protowire.AppendTag(b, 1, protowire.VarintType), 300)
	b = protowire.AppendFixed64(protowire.AppendTag(b, 2, protowire.Fixed64Type), math.Float64bits(-2.5))
	b = protowire.AppendString(protowire.AppendTag(b, 3, protowire.BytesType), "héllo")
	b = protowire.AppendFixed32(protowire.AppendTag(b, 4, protowire.Fixed32Type), 7)
	b = protowire.AppendGroup(protowire.AppendTag(b, 5, protowire.StartGroupType), 5, protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1))
	b = protowire.AppendVarint(protowire.AppendTag(b, 536870911, protowire.VarintType), 9)
	var got []Field
	if err := Each(b, func(f Field) error { got = append(got, f); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 {
		t.Fatalf("%d fields: %+v", len(got), got)
	}
	if v, err := got[0].Varint(); v != 300 || err != nil {
		t.Errorf("varint %d %v", v, err)
	}
	if v, err := got[1].Double(); v != -2.5 || err != nil {
		t.Errorf("double %g %v", v, err)
	}
	if v, err := got[2].String(); v != "héllo" || err != nil {
		t.Errorf("string %q %v", v, err)
	}
	if got[3].Int != 7 || got[3].Type != protowire.Fixed32Type || got[4].Type != protowire.StartGroupType || got[5].Num != 536870911 {
		t.Errorf("fields %+v", got[3:])
	}
	if _, err := got[0].String(); err == nil || !strings.Contains(err.Error(), "field 1") {
		t.Errorf("a varint read as a string: %v", err)
	}
	if _, err := got[2].Fixed64(); err == nil {
		t.Error("a string read as a fixed64")
	}
}

// TestEachMalformed: bytes cut short, a length beyond the end, and a bad tag are errors,
// never a panic; fn's error stops the walk.
func TestEachMalformed(t *testing.T) {
	good := protowire.AppendString(protowire.AppendTag(nil, 3, protowire.BytesType), "abc")
	for _, b := range [][]byte{good[:len(good)-1], {0x1a, 0x7f, 'a'}, {0x00}, {0x80}, {0x0b}} {
		if err := Each(b, func(Field) error { return nil }); err == nil {
			t.Errorf("% x: no error", b)
		}
	}
	stop := Each(append(good, good...), func(Field) error { return errStop })
	if stop != errStop {
		t.Errorf("fn's error: %v", stop)
	}
}

var errStop = &stopErr{}

type stopErr struct{}

func (*stopErr) Error() string { return "stop" }

func FuzzEach(f *testing.F) {
	f.Add([]byte{0x1a, 0x03, 'a', 'b', 'c'})
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = Each(b, func(f Field) error {
			if f.Type == protowire.BytesType && len(f.Bytes) > len(b) {
				t.Errorf("a field longer than its message")
			}
			return nil
		})
	})
}
