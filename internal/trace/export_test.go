package trace

import "time"

// SetSMIZone sets the zone nvidia-smi timestamps are read in, until the returned func.
func SetSMIZone(l *time.Location) (restore func()) {
	old := smiZone
	smiZone = l
	return func() { smiZone = old }
}
