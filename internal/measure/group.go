package measure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Outlived is what Run returns, beside the command's exit code, where processes the
// command started were still running after it exited (a launcher's workers, a `sh -c`
// whose child goes on): the measurement ended with the command, before their work did,
// unless Waited says how long measure waited for them (--wait-children).
type Outlived struct {
	PIDs   []int
	Waited time.Duration
}

func (o *Outlived) Error() string {
	pids := make([]string, len(o.PIDs))
	for i, p := range o.PIDs {
		pids[i] = strconv.Itoa(p)
	}
	if o.Waited > 0 {
		return fmt.Sprintf("processes the command started ran on after it exited (pid %s): measure waited %.3f s for them to end (--wait-children)", strings.Join(pids, ", "), o.Waited.Seconds())
	}
	return fmt.Sprintf("processes the command started ran on after it exited (pid %s, still running): the measurement ended with the command, their work after it is not in the figures; --wait-children waits for them", strings.Join(pids, ", "))
}

// ownGroup says whether the command gets a process group of its own: always, unless its
// stdin is a terminal (a process group other than the terminal's foreground one is stopped
// when it reads from it; there, the terminal's Ctrl-C reaches the command's whole group).
func ownGroup(stdin io.Reader) bool {
	f, ok := stdin.(*os.File)
	return !ok || !isTerminal(f)
}

// signalGroup sends sig to the command, and 100 ms later to the rest of its process group
// where it has one: the command first, so that one that handles the signal (a shell's
// trap, a launcher that forwards it) is not raced by its children dying under it.
func signalGroup(p *os.Process, group bool, sig os.Signal) error {
	err := p.Signal(sig)
	if s, ok := sig.(syscall.Signal); ok && group {
		pid := p.Pid
		time.AfterFunc(100*time.Millisecond, func() { _ = syscall.Kill(-pid, s) })
	}
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// groupMembers lists the live processes of process group pgid (from /proc; nil where it
// cannot be read, or none is left). Zombies are not counted: they have ended.
func groupMembers(pgid int) []int {
	if syscall.Kill(-pgid, 0) != nil {
		return nil
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return []int{pgid}
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: after the last ')'.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			out = append(out, pid)
		}
	}
	slices.Sort(out)
	return out
}

// waitGroup waits until group pgid has no live process, polling every 20 ms, or until ctx
// ends (then the group is sent sig, and SIGKILL after grace).
func waitGroup(ctx context.Context, pgid int, sig func() os.Signal, grace time.Duration) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	var killAt time.Time
	for len(groupMembers(pgid)) > 0 {
		select {
		case <-ctx.Done():
			if killAt.IsZero() {
				if s, ok := sig().(syscall.Signal); ok {
					_ = syscall.Kill(-pgid, s)
				}
				killAt = time.Now().Add(grace)
			} else if time.Now().After(killAt) {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
				return
			}
			time.Sleep(20 * time.Millisecond)
		case <-t.C:
		}
	}
}

// endGroup waits until group pgid has no live process or deadline has passed, then sends
// SIGKILL to what is left and waits for it (at most a second more).
func endGroup(pgid int, deadline time.Time) {
	for len(groupMembers(pgid)) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	for i := 0; i < 100 && len(groupMembers(pgid)) > 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
}
