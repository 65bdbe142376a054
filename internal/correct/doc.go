// Package correct turns the readings of a GPU power sensor into the energy of the true
// power: it drops stale repeats, inverts the sensor's model (a first-order RC lag, a
// boxcar window updated every period, or none), and integrates on the readings' own
// timestamps over a region, with the energy above the idle floor and warnings that say
// what the sensor cannot see.
//
// A sensormodel.Model is parsed from a spec (sensormodel.Parse: "rc:tau=0.84s",
// "boxcar:window=25ms,period=100ms"); a Spec adds "auto" (a guess from the trace's
// metadata, see Auto) and sensor.json profiles (Profile). Energy does the work. The method
// and its limits, with the figures the tests measure on the sim device, are in
// docs/energy.md.
package correct
