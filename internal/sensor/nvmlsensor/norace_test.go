//go:build !race

package nvmlsensor_test

const raceEnabled = false
