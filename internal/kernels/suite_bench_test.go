package kernels

import "testing"

// BenchmarkDefault: the default suite's PTX for the default device, as micro builds it
// (twice with --only: once to check the names, once for the device).
func BenchmarkDefault(b *testing.B) {
	for b.Loop() {
		if _, err := Default(SuiteOpts{}); err != nil {
			b.Fatal(err)
		}
	}
}
