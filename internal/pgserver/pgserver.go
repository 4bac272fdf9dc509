// Package pgserver starts a private PostgreSQL server from the machine's
// binaries (initdb, pg_ctl, postgres) in a directory of its own, listening
// on a free loopback port: what the tests, `cutover demo --postgres` and
// `cutover bench copy --postgres` run against. PostgreSQL refuses to run
// as root; run as root, the server runs as the unprivileged user "nobody"
// (through runuser) in a directory that user owns.
package pgserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	neturl "net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoBinaries is returned by Bin and Start when no PostgreSQL binaries
// are found.
var ErrNoBinaries = errors.New("pgserver: no PostgreSQL binaries (initdb, pg_ctl) in $CUTOVER_PG_BIN, /usr/lib/postgresql/*/bin or $PATH; install Debian's postgresql")

// Bin returns the directory holding initdb, pg_ctl and postgres:
// $CUTOVER_PG_BIN when set, else the newest /usr/lib/postgresql/N/bin,
// else the directory initdb resolves to on $PATH.
func Bin() (string, error) {
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "pg_ctl", "postgres"} {
			if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
				return false
			}
		}
		return true
	}
	if d := os.Getenv("CUTOVER_PG_BIN"); d != "" {
		if !has(d) {
			return "", fmt.Errorf("pgserver: CUTOVER_PG_BIN=%s lacks initdb, pg_ctl or postgres", d)
		}
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) })
	for _, d := range dirs {
		if has(d) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil && has(filepath.Dir(r)) {
			return filepath.Dir(r), nil
		}
	}
	return "", ErrNoBinaries
}

// versionOf is N of /usr/lib/postgresql/N/bin (0 when not a number).
func versionOf(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// Options configures Start.
type Options struct {
	// Dir is where the server keeps its data, socket and log; empty: a new
	// temporary directory, removed by Stop.
	Dir string
	// Durable keeps fsync on (the benches and the demo). Off, the server
	// does not fsync (tests: a crash of the machine is not what they
	// test); commits stay synchronous, so a killed server (Kill) keeps
	// every acknowledged commit either way.
	Durable bool
	// Log receives progress lines (nil: none).
	Log func(format string, args ...any)
}

// Server is a running private PostgreSQL server.
type Server struct {
	bin, dir, owner string
	removeDir       bool
	port            int
	durable         bool

	mu      sync.Mutex
	stopped bool
}

// Start initialises a cluster in o.Dir (unless one is there) and starts the
// server on a free loopback port, trust authentication for the user
// "postgres". Errors: ErrNoBinaries; initdb's or pg_ctl's own output.
func Start(ctx context.Context, o Options) (*Server, error) {
	bin, err := Bin()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: o.Dir, durable: o.Durable}
	if s.dir == "" {
		if s.dir, err = os.MkdirTemp("", "cutover-pg-*"); err != nil {
			return nil, fmt.Errorf("pgserver: %w", err)
		}
		s.removeDir = true
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("pgserver: %w", err)
	}
	if os.Geteuid() == 0 {
		if err := s.chownToNobody(); err != nil {
			s.cleanup()
			return nil, err
		}
	}
	logf := o.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if _, err := os.Stat(filepath.Join(s.data(), "PG_VERSION")); err != nil {
		logf("pgserver: initdb %s", s.data())
		if out, err := s.run(ctx, "initdb", "-D", s.data(), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-locale"); err != nil {
			s.cleanup()
			return nil, fmt.Errorf("pgserver: initdb: %w: %s", err, out)
		}
	}
	if err := s.start(ctx); err != nil {
		s.cleanup()
		return nil, err
	}
	logf("pgserver: PostgreSQL at %s (data %s)", s.URL(), s.data())
	return s, nil
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

// chownToNobody makes the directory the unprivileged user's, who will run
// the server.
func (s *Server) chownToNobody() error {
	u, err := user.Lookup("nobody")
	if err != nil {
		return fmt.Errorf("pgserver: running as root needs the user nobody: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	s.owner = "nobody"
	// Every parent must be traversable by nobody (a temporary directory
	// under a private one would not be).
	for d := filepath.Dir(s.dir); d != "/" && d != "."; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("pgserver: %w", err)
		}
		if st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("pgserver: %s is not traversable by nobody (mode %v): choose another directory", d, st.Mode().Perm())
		}
	}
	return filepath.Walk(s.dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// run runs one of the binaries, as nobody when root.
func (s *Server) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	path := filepath.Join(s.bin, name)
	var cmd *exec.Cmd
	if s.owner != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", s.owner, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd.CombinedOutput()
}

// start starts the server on a free port, trying again on another when the
// port was taken between the pick and the bind.
func (s *Server) start(ctx context.Context) error {
	var err error
	for range 5 {
		if s.port, err = freePort(); err != nil {
			return err
		}
		if err = s.startOn(ctx); err == nil || !strings.Contains(err.Error(), "already in use") {
			return err
		}
	}
	return err
}

// startOn starts the server on s.port and waits until it accepts
// connections.
func (s *Server) startOn(ctx context.Context) error {
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c max_connections=200", s.port)
	if !s.durable {
		opts += " -c fsync=off -c full_page_writes=off"
	}
	out, err := s.run(ctx, "pg_ctl", "-D", s.data(), "-l", filepath.Join(s.dir, "server.log"), "-o", opts, "-w", "-t", "120", "start")
	if err != nil {
		return fmt.Errorf("pgserver: pg_ctl start: %w: %s%s", err, out, s.logTail())
	}
	s.mu.Lock()
	s.stopped = false
	s.mu.Unlock()
	return nil
}

// logTail is the end of the server's log, for an error message.
func (s *Server) logTail() string {
	b, err := os.ReadFile(filepath.Join(s.dir, "server.log"))
	if err != nil {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return "\nserver log:\n" + string(b)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgserver: pick a port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// URL is the connection URL of the database "postgres".
func (s *Server) URL() string { return s.DatabaseURL("postgres") }

// DatabaseURL is the connection URL of the database name.
func (s *Server) DatabaseURL(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, name)
}

// Addr is the server's loopback address ("127.0.0.1:port").
func (s *Server) Addr() string { return fmt.Sprintf("127.0.0.1:%d", s.port) }

// Redact is url with its password, if any, replaced by "xxxxx" (for
// logs and reports).
func Redact(url string) string {
	u, err := neturl.Parse(url)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// CreateDatabase creates the database name (a fresh one per test) and
// returns its URL.
func (s *Server) CreateDatabase(ctx context.Context, name string) (string, error) {
	conn, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		return "", fmt.Errorf("pgserver: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("pgserver: create database %s: %w", name, err)
	}
	return s.DatabaseURL(name), nil
}

// Kill stops the server at once, as a crash would (pg_ctl stop -m
// immediate: no checkpoint, clients cut off); Restart brings it back on
// the same port.
func (s *Server) Kill(ctx context.Context) error {
	out, err := s.run(ctx, "pg_ctl", "-D", s.data(), "-m", "immediate", "-w", "stop")
	if err != nil {
		return fmt.Errorf("pgserver: pg_ctl stop: %w: %s", err, out)
	}
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	return nil
}

// Restart starts a killed server again on its port.
func (s *Server) Restart(ctx context.Context) error { return s.startOn(ctx) }

// Stop stops the server (fast shutdown) and removes the directory Start
// created.
func (s *Server) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s.mu.Lock()
	stopped := s.stopped
	s.stopped = true
	s.mu.Unlock()
	var err error
	if !stopped {
		if out, e := s.run(ctx, "pg_ctl", "-D", s.data(), "-m", "fast", "-w", "stop"); e != nil {
			err = fmt.Errorf("pgserver: pg_ctl stop: %w: %s", e, out)
		}
	}
	s.cleanup()
	return err
}

func (s *Server) cleanup() {
	if s.removeDir {
		_ = os.RemoveAll(s.dir)
	}
}
