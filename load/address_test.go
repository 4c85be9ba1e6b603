package load

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/denorm/denorm/internal/connstr"
	"github.com/denorm/denorm/internal/testenv"
)

// TestParseTarget: what a --target names, decided without connecting.
func TestParseTarget(t *testing.T) {
	cases := []struct {
		target string
		server bool
		err    string // "" when valid
	}{
		{"mongodb://127.0.0.1:27017/db", true, ""},
		{"MONGODB://127.0.0.1/db", true, ""},
		{"MongoDB+SRV://cluster.example.net/db", true, ""},
		{"mongodb+srv://u:pw@cluster.example.net/db", true, ""},
		{"./out", false, ""},
		{"out", false, ""},
		{"/tmp/denorm-out", false, ""},
		{"C:/out", false, ""},
		{"a=b", false, ""},
		{"mongo://u:pw@h/db", false, `unknown scheme "mongo"`},
		{"postgres://u:pw@h/db", false, "is a PostgreSQL URL"},
		{"POSTGRESQL://h/db", false, "is a PostgreSQL URL"},
		{"http://h/db", false, `unknown scheme "http"`},
		{"s3://bucket/prefix", false, `unknown scheme "s3"`},
		{"file:///tmp/out", false, "not a file:// URL"},
		{"mongodb:/h/db", false, "looks like a URI"},
		{"host=h dbname=d password=pw", false, "looks like a PostgreSQL connection string"},
		{"127.0.0.1:27017", false, "without a scheme"},
		{"localhost:27017/db", false, "without a scheme"},
	}
	for _, c := range cases {
		t.Run(c.target, func(t *testing.T) {
			_, server, err := ParseTarget(c.target)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("error %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("error %v, want %q", err, c.err)
			case c.err == "" && server != c.server:
				t.Errorf("server %v, want %v", server, c.server)
			}
			if err != nil && strings.Contains(err.Error(), "pw") {
				t.Errorf("error %q holds the password", err)
			}
		})
	}
}

// TestOpenServerErrors: a server URI that cannot be used fails with its
// reason, never with the password, and never becomes a directory.
func TestOpenServerErrors(t *testing.T) {
	cases := []struct{ uri, want string }{
		{"mongodb://u:p%zzsecret@127.0.0.1:1/db", "does not start a %XX escape"},
		{"mongodb://u:secret@127.0.0.1:1", "names no database"},
		{"mongodb+srv://u:secret@cluster.example.net:27017/db", "port"},
		{"mongodb+srv://u:secret@a.example.net,b.example.net/db", "mongodb+srv"},
		// .invalid never resolves (RFC 6761): the SRV lookup fails.
		{"MONGODB+SRV://u:secret@cluster.example.invalid/db", "lookup _mongodb._tcp.cluster.example.invalid"},
	}
	for _, c := range cases {
		t.Run(c.uri, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := Open(ctx, c.uri, Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "zz") {
				t.Errorf("error %q holds the password", err)
			}
		})
	}
}

// TestServerTimeouts: a server that never answers makes Open fail within
// the URI's timeouts, and a refused connection fails as fast.
func TestServerTimeouts(t *testing.T) {
	for _, c := range testenv.DeadServers(t) {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			_, err := Open(context.Background(), "mongodb://u:secret@"+c.Addr+"/db?connectTimeoutMS=500&serverSelectionTimeoutMS=1500", Options{})
			took := time.Since(start)
			if err == nil {
				t.Fatal("opened a server that does not answer")
			}
			if took > 10*time.Second {
				t.Errorf("failed after %s, the URI allows 1.5s", took)
			}
			if !strings.Contains(err.Error(), "no server answered within 1.5s (serverSelectionTimeoutMS") || strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q", err)
			}
			t.Logf("%s: %v", took.Round(time.Millisecond), err)
		})
	}
}

// TestClientOptionsDefaults: denorm's timeouts apply unless the URI sets
// its own.
func TestClientOptionsDefaults(t *testing.T) {
	o := clientOptions(mustParse(t, "mongodb://h/db"))
	if *o.ConnectTimeout != DefaultConnectTimeout || *o.ServerSelectionTimeout != DefaultServerSelectionTimeout || *o.Timeout != DefaultOperationTimeout {
		t.Errorf("defaults: connect %v, server selection %v, operation %v", *o.ConnectTimeout, *o.ServerSelectionTimeout, *o.Timeout)
	}
	o = clientOptions(mustParse(t, "mongodb://h/db?connectTimeoutMS=1234&serverSelectionTimeoutMS=5678&timeoutMS=0"))
	if *o.ConnectTimeout != 1234*time.Millisecond || *o.ServerSelectionTimeout != 5678*time.Millisecond || *o.Timeout != 0 {
		t.Errorf("URI's: connect %v, server selection %v, operation %v", *o.ConnectTimeout, *o.ServerSelectionTimeout, *o.Timeout)
	}
}

func mustParse(t *testing.T, uri string) connstr.String {
	t.Helper()
	cs, server, err := ParseTarget(uri)
	if err != nil || !server {
		t.Fatalf("%s: %v", uri, err)
	}
	return cs
}

// TestConnectCauseProbe: when server selection gives up before any attempt
// of the driver's has an error to tell (on a machine too busy for the
// first attempt to finish in time, or one held by a server that never
// replies), openServer dials the hosts itself: an address that refuses is
// told as refusing, one that accepts as "nothing replied".
func TestConnectCauseProbe(t *testing.T) {
	// A listener that takes the driver's first connection, holds it
	// without a reply and then closes: the driver has nothing to tell
	// when selection gives up, and a dial after that is refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		l.Close()
		if err == nil {
			held <- c
		}
	}()
	t.Cleanup(func() {
		l.Close()
		select {
		case c := <-held:
			c.Close()
		default:
		}
	})
	silent := testenv.SilentServer(t, true)
	for _, c := range []struct{ name, addr, want string }{
		{"refused after", l.Addr().String(), "dial tcp " + l.Addr().String() + ": connect: connection refused"},
		{"silent", silent, "nothing replied to the MongoDB handshake"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Open(context.Background(), "mongodb://u:secret@"+c.addr+"/db?serverSelectionTimeoutMS=2000", Options{})
			if err == nil {
				t.Fatal("opened a server that does not answer")
			}
			if !strings.Contains(err.Error(), "no server answered within 2s (serverSelectionTimeoutMS") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want the cause %q", err, c.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q holds the password", err)
			}
		})
	}
}

// TestDialAny: the first host's error when none connects, nil when one
// does; a host without a port is dialled at MongoDB's.
func TestDialAny(t *testing.T) {
	closed, open := testenv.ClosedPort(t), testenv.SilentServer(t, true)
	ctx := context.Background()
	if err := dialAny(ctx, []string{closed}, time.Second); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("closed port: %v", err)
	}
	if err := dialAny(ctx, []string{closed, open}, time.Second); err != nil {
		t.Errorf("a closed port and a listener: %v", err)
	}
	// Unless a server listens there, the refusal names MongoDB's port.
	if err := dialAny(ctx, []string{"127.0.0.1"}, time.Second); err != nil && !strings.Contains(err.Error(), "127.0.0.1:27017") {
		t.Errorf("a host without a port: %v, want a dial of 127.0.0.1:27017", err)
	}
}
