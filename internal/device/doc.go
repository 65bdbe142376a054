// Package device resolves --device and --sim-config, once, for every verb: "auto" (the
// NVIDIA and AMD GPUs of this machine, side by side on a mixed host, else the sim device,
// announced in one line), "nvml", "amdsmi", "sim" or "sim:PRESET", optionally configured
// from a JSON file. It is the only place that decides
// which kind of device a value names; everything else asks gpu.System.Simulated.
//
// What must stay: Spec.Parse (and ParseName, which it is built on) opens nothing and reads
// no file, so every Validate can call it; its errors name the value and the choices
// (presets listed), and the caller says where the value came from (--device on the
// command line, Options.Device in the library). No other package compares a device name
// with "sim".
package device
