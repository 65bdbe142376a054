package gpu

import "time"

// Within runs f and returns true with its error, or false once d has passed with f
// still running (f goes on in the background: a driver call that hangs cannot be
// stopped, only left behind). The systems' Close use it so that a hung driver cannot
// hold up the end of a run.
func Within(d time.Duration, f func() error) (finished bool, err error) {
	done := make(chan error, 1)
	go func() { done <- f() }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-done:
		return true, err
	case <-t.C:
		return false, nil
	}
}
