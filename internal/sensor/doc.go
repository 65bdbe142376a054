// Package sensor defines a power (or clock, temperature, state) channel of a GPU and the
// Sampler that records many channels of many GPUs at once on one monotonic clock.
//
// Implementations live in nvmlsensor (the NVIDIA driver) and simsensor (the sim device's
// sensor models). A Sensor knows nothing about kernels or commands.
//
// What must stay: Sensor is two methods, Channel (what it reads) and an append-style
// Read(dst) (the caller owns the buffer; a buffered channel hands each sample to one
// reader only). Anything a source knows beyond that (its update period, its
// driver timestamps, a poke) is a small optional interface the Sampler asks for with a
// type assertion (PeriodHinter and its kind), so a new source implements two methods and
// no more.
package sensor
