//go:build !linux

package measure

import "os"

// isTerminal says whether f is a terminal: a character device, where there is no TCGETS.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
