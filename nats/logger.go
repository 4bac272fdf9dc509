package cnats

import (
	"fmt"
	"log"
	"os"
	"sync"

	"github.com/nats-io/nats-server/v2/server"
)

// serverLogger is attached to every embedded server. It never exits the
// process (nats-server's own logger calls os.Exit on Fatalf, which would kill
// a test binary when a port is taken), it remembers the last fatal or error
// line so that a failed start can say why, and it prints only when asked to.
type serverLogger struct {
	print bool
	out   *log.Logger

	mu struct {
		sync.Mutex
		lastFatal string
		lastError string
	}
}

var _ server.Logger = (*serverLogger)(nil)

func newServerLogger(name string, print bool) *serverLogger {
	return &serverLogger{
		print: print,
		out:   log.New(os.Stderr, "["+name+"] ", log.LstdFlags|log.Lmicroseconds),
	}
}

func (l *serverLogger) logf(level, format string, v ...any) {
	if l.print {
		l.out.Printf(level+" "+format, v...)
	}
}

// Noticef implements server.Logger.
func (l *serverLogger) Noticef(format string, v ...any) { l.logf("[INF]", format, v...) }

// Warnf implements server.Logger.
func (l *serverLogger) Warnf(format string, v ...any) { l.logf("[WRN]", format, v...) }

// Fatalf implements server.Logger without exiting.
func (l *serverLogger) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.mu.Lock()
	l.mu.lastFatal = msg
	l.mu.Unlock()
	l.logf("[FTL]", "%s", msg)
}

// Errorf implements server.Logger.
func (l *serverLogger) Errorf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.mu.Lock()
	l.mu.lastError = msg
	l.mu.Unlock()
	l.logf("[ERR]", "%s", msg)
}

// Debugf implements server.Logger.
func (l *serverLogger) Debugf(format string, v ...any) { l.logf("[DBG]", format, v...) }

// Tracef implements server.Logger.
func (l *serverLogger) Tracef(format string, v ...any) { l.logf("[TRC]", format, v...) }

// fatal reports whether the server logged a fatal error.
func (l *serverLogger) fatal() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.lastFatal != ""
}

// reason describes why a start failed, from the last fatal or error line.
func (l *serverLogger) reason() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.mu.lastFatal != "":
		return l.mu.lastFatal
	case l.mu.lastError != "":
		return l.mu.lastError
	default:
		return "no error logged"
	}
}
