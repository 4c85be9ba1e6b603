package testenv

import (
	"net"
	"sync"
	"testing"
)

// SilentServer listens on a loopback port that never answers and returns
// its address (host:port). With accept, it accepts connections and holds
// them open without reading or writing (a hung server); without, it never
// calls Accept (the kernel still completes the TCP handshake: the
// connection is made, and nothing ever comes). Closed when the test ends.
func SilentServer(t testing.TB, accept bool) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	if accept {
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		}()
	}
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

// ClosedPort returns a loopback address where nothing listens: connecting
// is refused at once.
func ClosedPort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// DeadServer is a loopback address that never gives a useful answer.
type DeadServer struct {
	Name, Addr string
}

// DeadServers are the three ways a server fails to answer: it accepts and
// never answers, it never accepts (the kernel completes the handshake),
// or nothing listens (refused at once).
func DeadServers(t testing.TB) []DeadServer {
	return []DeadServer{
		{"accepts and never answers", SilentServer(t, true)},
		{"never accepts", SilentServer(t, false)},
		{"refuses", ClosedPort(t)},
	}
}
