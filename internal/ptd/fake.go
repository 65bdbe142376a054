package ptd

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Fake is a small stand-in for PTDaemon, for tests: it listens on loopback only, serves at
// most MaxConns connections at a time, reads lines of at most 256 bytes, and samples Power
// every measurement interval between Go and Stop. Watts reports the samples of the current
// or last measurement. It answers the errors PTDaemon answers: "Error: no measurement to
// stop", "Unknown command", "Invalid number of parameters".
type Fake struct {
	// Power gives the power at each sample; nil means a constant 100 W. A negative value
	// is logged as an invalid sample, as PTDaemon does.
	Power func() float64
	// Interval is the sampling period used when Go asks for 0 ms; 0 means 10 ms.
	Interval time.Duration
	// FailNext makes the reply to the next command with this verb an "Error: injected" line.
	FailNext string
	// MaxConns bounds concurrent connections (0 means 2).
	MaxConns int

	ln       net.Listener
	mu       sync.Mutex
	log      []string
	measure  bool
	stopTick chan struct{}
	tickDone chan struct{}
	mark     string
	samples  []float64
	errs     int
	marks    map[string]int
	wg       sync.WaitGroup
	sem      chan struct{}
}

// StartFake starts a fake PTDaemon on 127.0.0.1 (an ephemeral port). Close stops it.
func StartFake(f *Fake) (*Fake, error) {
	if f == nil {
		f = &Fake{}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	if f.MaxConns <= 0 {
		f.MaxConns = 2
	}
	f.ln, f.sem, f.marks = ln, make(chan struct{}, f.MaxConns), map[string]int{}
	f.wg.Add(1)
	go f.serve()
	return f, nil
}

// Addr is the host:port the fake listens on.
func (f *Fake) Addr() string { return f.ln.Addr().String() }

// Commands returns the command lines received so far.
func (f *Fake) Commands() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

// MarkSamples returns how many samples were logged under each mark.
func (f *Fake) MarkSamples() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := map[string]int{}
	for k, v := range f.marks {
		m[k] = v
	}
	return m
}

// Close stops the listener, ends the connections and waits for them.
func (f *Fake) Close() error {
	err := f.ln.Close()
	f.mu.Lock()
	f.stopLocked()
	f.mu.Unlock()
	f.wg.Wait()
	return err
}

func (f *Fake) serve() {
	defer f.wg.Done()
	var conns sync.WaitGroup
	var open sync.Map
	for {
		c, err := f.ln.Accept()
		if err != nil {
			open.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
			conns.Wait()
			return
		}
		select {
		case f.sem <- struct{}{}:
		default:
			c.Close() // too many connections
			continue
		}
		open.Store(c, true)
		conns.Add(1)
		go func() {
			defer conns.Done()
			defer func() { <-f.sem; open.Delete(c); c.Close() }()
			f.handle(c)
		}()
	}
}

func (f *Fake) handle(c net.Conn) {
	r := bufio.NewReaderSize(c, 256)
	for {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		line, err := r.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				fmt.Fprintf(c, "Error: line too long\r\n")
			}
			return
		}
		cmd := strings.TrimRight(string(line), "\r\n")
		fmt.Fprintf(c, "%s\r\n", f.reply(cmd))
	}
}

func (f *Fake) reply(cmd string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, cmd)
	fields := strings.Split(cmd, ",")
	verb := fields[0]
	if f.FailNext != "" && strings.EqualFold(f.FailNext, verb) {
		f.FailNext = ""
		return "Error: injected failure"
	}
	switch verb {
	case "Hello":
		return "Hello, PTDaemon here!"
	case "Identify":
		return "FakeAnalyzer,1000,1,1,1,1,0,0,0,version=0.0.0-gpuwatt-fake,OS=Go,mode=power,0,0,1"
	case "Go":
		if len(fields) < 3 || len(fields) > 4 {
			return "Invalid number of parameters"
		}
		ms, err1 := strconv.Atoi(fields[1])
		n, err2 := strconv.Atoi(fields[2])
		if err1 != nil || err2 != nil || ms < 0 || n < 0 {
			return "Error in parameter"
		}
		iv := time.Duration(ms) * time.Millisecond
		if iv == 0 {
			iv = f.Interval
		}
		if iv <= 0 {
			iv = 10 * time.Millisecond
		}
		f.stopLocked()
		f.samples, f.errs, f.measure = nil, 0, true
		if len(fields) == 4 {
			f.mark = fields[3]
		}
		f.stopTick, f.tickDone = make(chan struct{}), make(chan struct{})
		go f.tick(iv, f.stopTick, f.tickDone)
		return fmt.Sprintf("Starting untimed measurement, maximum 500000 samples at %dms with 0 rampup samples", iv.Milliseconds())
	case "Mark":
		if len(fields) != 2 {
			return "Invalid number of parameters"
		}
		f.mark = fields[1]
		return "Mark set"
	case "Stop":
		if !f.measure {
			return "Error: no measurement to stop"
		}
		f.stopLocked()
		return "Stopping untimed measurement"
	case "Watts":
		if len(fields) != 1 {
			return "Invalid number of parameters"
		}
		if len(f.samples) == 0 {
			return fmt.Sprintf("Watts,-1.000000,-1.000000,-1.000000,0,%d,0", f.errs)
		}
		sum, lo, hi := 0.0, math.Inf(1), math.Inf(-1)
		for _, w := range f.samples {
			sum += w
			lo, hi = math.Min(lo, w), math.Max(hi, w)
		}
		n := len(f.samples)
		return fmt.Sprintf("Watts,%.6f,%.6f,%.6f,%d,%d,%d", sum/float64(n), lo, hi, n+f.errs, f.errs, n)
	}
	return "Unknown command"
}

// stopLocked ends the sampling goroutine; f.mu is held and released while waiting.
func (f *Fake) stopLocked() {
	if !f.measure {
		return
	}
	f.measure = false
	close(f.stopTick)
	done := f.tickDone
	f.mu.Unlock()
	<-done
	f.mu.Lock()
}

func (f *Fake) tick(iv time.Duration, stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(iv)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			w := 100.0
			if f.Power != nil {
				w = f.Power()
			}
			f.mu.Lock()
			if w > 0 {
				f.samples = append(f.samples, w)
			} else {
				f.errs++
			}
			f.marks[f.mark]++
			f.mu.Unlock()
		}
	}
}
