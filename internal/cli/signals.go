package cli

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
)

// Interrupted is the cause of a run's context ended by a signal (SignalContext): every
// verb ends the same way on SIGINT, SIGTERM and SIGHUP (the measured command is sent the
// same signal, what was measured is written, marked incomplete) and exits 128 plus the
// signal's number: 130, 143, 129.
type Interrupted struct{ Sig os.Signal }

func (i Interrupted) Error() string { return "interrupted by " + signalName(i.Sig) }

// Signal is the signal that ended the run (measure.ExecRunner forwards it to the command).
func (i Interrupted) Signal() os.Signal { return i.Sig }

func signalName(s os.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return s.String()
}

// SignalContext returns a context that SIGINT, SIGTERM and SIGHUP cancel with an
// Interrupted cause; later signals are caught and ignored while the run writes what it
// measured. stop ends the catching.
func SignalContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			cancel(Interrupted{s})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// interruptedCode is the exit code of a run that ctx's end cut short: 128 plus the number
// of the signal that ended it (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP); 130 when
// it ended otherwise (a test's cancel).
func interruptedCode(ctx context.Context) int {
	var in Interrupted
	if errors.As(context.Cause(ctx), &in) {
		if s, ok := in.Sig.(syscall.Signal); ok {
			return 128 + int(s)
		}
	}
	return 130
}
