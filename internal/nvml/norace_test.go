//go:build !race

package nvml_test

const raceEnabled = false
