package cnats

import (
	"fmt"
	"net"
	"strings"
)

// freePorts returns n distinct free TCP ports on host. The listeners are all
// held until every port is chosen, so the ports are distinct; another process
// could still take one before the server binds it, which start reports.
func freePorts(host string, n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, fmt.Errorf("cnats: pick free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// bindAttempts bounds the starts retryBind makes.
const bindAttempts = 4

// retryBind runs start, which picks its ports with freePorts and leaves
// nothing running when it fails, again on fresh ports while it fails because
// another process took a port between the pick and the bind ("address
// already in use": on a busy machine, another test's listener). Other
// errors end it at once.
func retryBind[T any](start func() (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		v, err := start()
		if err == nil || attempt == bindAttempts || !strings.Contains(err.Error(), "address already in use") {
			return v, err
		}
	}
}
