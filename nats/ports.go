package cnats

import (
	"fmt"
	"net"
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
