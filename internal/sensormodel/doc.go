// Package sensormodel is the one model of a sensor channel: how the readings of a channel
// follow the true signal (usually power). The sim generates readings through it (adding
// noise, gain, offset and quantisation), correct inverts it, sensor characterisation fits
// it and profile deconvolves with it.
//
// A reading published at update k is
//
//	quantise(Gain * mean over [t_k - Delay - Window, t_k - Delay] of lag(P) + Offset + Noise*z_k)
//
// where t_k = Phase + k*Period (± Jitter*Period), lag is a first-order RC low-pass with time
// constant Tau (the K20's "capacitor" of Burtscher et al.: tau·dy/dt = P − y; identity when
// Tau is 0), a zero Window is a point sample, and quantise rounds to a multiple of Quantum.
//
// The shape of the model (Kind) follows from its parameters: a Window makes it a boxcar
// (of the lagged power when Tau > 0), a Tau without a Window an RC lag, neither "none".
// Each parameter may carry its 95 % interval from a characterisation (CI).
//
// The package imports only the standard library and units.
//
// What must stay: the reading equation above is the package's contract, and every
// consumer (the sim generating, correct inverting, sensorchar fitting, profile
// deconvolving) reads the same Model with the same units on its fields (time.Duration,
// units.Power) and the same JSON keys with SI suffixes (period_s, window_s, tau_s). A new
// effect of a sensor is a new parameter of this one model and a term of this equation,
// never a second model type in another package.
package sensormodel
