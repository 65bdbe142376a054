package cli

import "testing"

// TestRealClock runs the in-process tests on the real clock side by side, and before the
// package's parallel tests (a top-level test that is not parallel ends before they start):
// a CPU-bound test beside one starves its sampler's polls or its markers' arrival, but
// these mostly sleep through a real command, a marker's wait or a push interval (0.02-0.35
// s of CPU each, 1.5-3.4 s of wall for the longest). One after another they took 11 s of
// wall. Each keeps its name as its subtest's (go test -run 'TestRealClock/TestServeOTLP').
// The job tests stay apart (TestJobSimTruth sets PATH; TestJobHostTruth says why), as do
// the tests that change process-wide state (TestFullDisk, TestEnergySMIFallBack).
func TestRealClock(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(*testing.T)
	}{
		// Longest first: with -parallel 8 the ninth waits for a slot.
		{"TestSimLoadStatedAndIdle", testSimLoadStatedAndIdle},
		{"TestServeOTLP", testServeOTLP},
		{"TestMeasureMI300XSleep", testMeasureMI300XSleep},
		{"TestMeasureRegionsHost", testMeasureRegionsHost},
		{"TestMeasureMarksWarm", testMeasureMarksWarm},
		{"TestMarksSwappedForSymlink", testMarksSwappedForSymlink},
		{"TestMeasureInterruptedRealClock", testMeasureInterruptedRealClock},
		{"TestLoadlevelNoGPU", testLoadlevelNoGPU},
		{"TestMeasureMarksBadAndUnsynced", testMeasureMarksBadAndUnsynced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}
