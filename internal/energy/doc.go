// Package energy is the one estimator of the energy of a region of a trace for one GPU,
// and the one value a measured energy is told in.
//
// # The one-figure contract
//
// A measured energy is a Figure: the value, its 95 % interval on the board's own scale
// (LowJ, HighJ: what repeats on this board, so figures of one board compare within it),
// the absolute interval with the board's gain error (AbsoluteLowJ, AbsoluteHighJ: the
// bounds of the true energy), the Method, the Channel its readings came from, Source and
// Note for people, the Uncertainty budget it was built from, Partial where a component
// could not be computed (the interval is then a floor), and Warnings. A sum of figures (a
// job's GPUs, a command's boards, a node) is an Interval.
//
//   - Every verb and library call that reports a region's energy (measure's regions,
//     `energy --region` and --from/--to through Query, job, the recorder behind the Python
//     package, the Go library, micro, archline and profile through the measurement loop,
//     loadlevel's GPU meter) asks Region, or Marked for a list of marked spans; nothing
//     else picks between the counter, the ring and the sensor model.
//   - Nothing edits a figure's interval after Region returns it. What a caller knows about
//     the span goes in as an input: Options.Late (marker arrival times), Options.CounterEdges
//     (edges that are the counter's own readings, as a job's begin and end), Options.Method,
//     Options.Channel. So every path over one span gives the same figure to the last digit
//     (internal/cli TestFivePathsOneFigure: measure's region, energy --region, energy
//     --from/--to, job and the library on the H200 markers run).
//   - A result that reports an energy embeds Figure (its JSON flat in the result's: keys
//     energy_j, energy_low_j, energy_high_j, absolute_low_j, absolute_high_j, method,
//     channel, source, note, uncertainty, warnings), and "no figure" is Method NoFigure with
//     a warning that says why, never a 0 J that reads as a measurement.
//   - Figures are computed on the trace as it is saved (trace.RoundToStored), so a saved
//     trace read back gives them again.
//
// # The estimator
//
// The order of preference (Region):
//
//  1. Counter: the driver's energy counter (energy.total), where it has at least
//     MinCounterReadings readings inside the region, spanning MinCounterSpan of it and
//     MinCounterSteps of its resolution in time. Its figure is the counter's increase
//     (interpolated at the edges), or for a steady region the least-squares rate of the
//     readings inside times the region's length.
//  2. CalibratedRing: the best complete board channel (the driver's 20 ms sample ring,
//     else power.instant) on the counter's scale: gain × its integral + offset × duration,
//     gain and offset fitted robustly against the counter's increases over the whole
//     recording (FitCalibration), where it has MinChannelReadings readings inside; anchored
//     to the counter's increase over the readings around the region where that is the
//     narrower bound (anchor.go).
//  3. Inversion: the sensor model of one power channel inverted (internal/correct): the
//     model named by Options.Sensor (a spec or a sensor.json), else a guess from the
//     channel's and board's names (correct.Auto).
//
// Where none of them can be had, a counter interpolated across readings outside the
// region (CounterInterpolated) with a warning, else no figure.
//
// Options.Method forces one method (the cross-check of a channel against the counter asks
// for Inversion); where it cannot be had, there is no figure and a warning says why.
//
// Every estimate carries an uncertainty budget (Uncertainty): a 95 % interval relative to
// the board's own scale, built from the components the code can compute (the readings'
// noise, the calibration's or the sensor model's parameters propagated from their own
// intervals, the edges' resolution, the time a windowed sensor does not see, too few
// readings, the counter as a reference), combined as independent (root sum of squares); a
// component it cannot compute is listed as absent and the interval marked partial (a
// floor). The board's gain error (NVML's documented ±5 %, BoardGainError) is kept apart
// as the absolute part: it cancels in comparisons on one board, so LowJ and HighJ leave it
// out and AbsoluteLowJ and AbsoluteHighJ add it.
//
// Query is the `energy` verb's capability (a trace, a span or a marked region, a channel,
// a method) with Validate and Run; Report is what it gives.
package energy
