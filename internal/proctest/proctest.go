// Package proctest runs `cutover` processes for the multi-process tests
// (the cluster topology and crash durability tests): one binary built
// once, free loopback ports, processes that can be awaited, SIGKILLed and
// restarted on the same arguments, and the arguments of a loopback NATS
// cluster of `cutover nats` nodes.
package proctest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Binary is $CUTOVER_BIN, or ./cmd/cutover built once into dir.
func Binary(t testing.TB, dir string) string {
	t.Helper()
	if b := os.Getenv("CUTOVER_BIN"); b != "" {
		abs, err := filepath.Abs(b)
		if err != nil {
			t.Fatal(err)
		}
		return abs
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	bin := filepath.Join(dir, "cutover")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/cutover")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// FreePorts returns n distinct free ports on 127.0.0.1.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return ports
}

// NATSNode is the `cutover nats` argument list of node i of a loopback
// cluster named name: client ports cport, route ports route (one per
// node), stores under dir.
func NATSNode(name, dir string, i int, cport, route []int) []string {
	var routes []string
	for j := range route {
		if j != i {
			routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", route[j]))
		}
	}
	return []string{"nats", "--name", fmt.Sprintf("%s-n%d", name, i), "--port", fmt.Sprint(cport[i]),
		"--store", filepath.Join(dir, fmt.Sprintf("n%d", i)),
		"--cluster-name", name, "--cluster-port", fmt.Sprint(route[i]), "--routes", strings.Join(routes, ",")}
}

// ClientURLs are the client URLs of cluster nodes on ports.
func ClientURLs(ports []int) string {
	var urls []string
	for _, p := range ports {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	return strings.Join(urls, ",")
}

// Proc is one `cutover` process. Its output is kept for Await and for the
// log printed when the test fails.
type Proc struct {
	Name string
	Args []string
	bin  string

	mu struct {
		sync.Mutex
		cmd       *exec.Cmd
		done      chan struct{}
		waitErr   error
		out, errs *buffer
	}
}

// Start runs bin args... as name until the test ends (SIGTERM then, with
// a 20 s bound before SIGKILL; a process that needs the SIGKILL fails the
// test).
func Start(t testing.TB, bin, name string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Name: name, Args: args, bin: bin}
	p.Restart(t)
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("--- %s stdout:\n%s\n--- %s stderr (tail):\n%s", name, p.Stdout(), name, Tail(p.Stderr(), 40))
		}
	})
	return p
}

// Restart starts the process again on the same arguments (after Kill).
func (p *Proc) Restart(t testing.TB) {
	t.Helper()
	cmd := exec.Command(p.bin, p.Args...)
	out, errs := &buffer{}, &buffer{}
	cmd.Stdout, cmd.Stderr = out, errs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.Name, err)
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.mu.cmd, p.mu.done, p.mu.out, p.mu.errs, p.mu.waitErr = cmd, done, out, errs, nil
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.mu.waitErr = err
		p.mu.Unlock()
		close(done)
	}()
}

// Kill ends the process at once (SIGKILL): a crash, not a shutdown.
func (p *Proc) Kill(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	cmd, done := p.mu.cmd, p.mu.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-done:
		return
	default:
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatalf("kill %s: %v", p.Name, err)
	}
	<-done
}

func (p *Proc) stop(t testing.TB) {
	p.mu.Lock()
	cmd, done := p.mu.cmd, p.mu.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Errorf("%s did not stop on SIGTERM", p.Name)
	}
}

// Exited reports whether the process has ended, and how.
func (p *Proc) Exited() (bool, error) {
	p.mu.Lock()
	done := p.mu.done
	p.mu.Unlock()
	select {
	case <-done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return true, p.mu.waitErr
	default:
		return false, nil
	}
}

// Stdout and Stderr are the current run's output so far.
func (p *Proc) Stdout() string { p.mu.Lock(); defer p.mu.Unlock(); return p.mu.out.String() }

// Stderr is the current run's standard error so far.
func (p *Proc) Stderr() string { p.mu.Lock(); defer p.mu.Unlock(); return p.mu.errs.String() }

// Await returns the last submatch of re in the process's stdout, waiting
// up to within; the test fails if the process exits or the time passes.
func (p *Proc) Await(t testing.TB, re string, within time.Duration) string {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(within)
	for {
		if m := rx.FindStringSubmatch(p.Stdout()); m != nil {
			return m[len(m)-1]
		}
		if exited, err := p.Exited(); exited {
			t.Fatalf("%s exited (%v):\n%s\n%s", p.Name, err, p.Stdout(), Tail(p.Stderr(), 40))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %q within %s:\n%s\n%s", p.Name, re, within, p.Stdout(), Tail(p.Stderr(), 40))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// Tail is the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// buffer is a bytes.Buffer safe for one writer and concurrent readers.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
