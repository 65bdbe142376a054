// Package calibration holds no code: its test is the calibration table of gpuwatt's 95 %
// intervals over every path a user meets (docs/calibration.md): `energy` by default and on
// each named channel, measure's marked regions, job, the library, on twins whose sensors
// are characterised first by `gpuwatt sensor` (the models a user would pass), never the
// generating ones.
package calibration
