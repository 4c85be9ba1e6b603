package extract

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
)

// TestTidyConnectError: the TLS refusal of sslmode=prefer's first attempt
// and repeated dial errors are left out; the one real cause stays.
func TestTidyConnectError(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"tls refusal then the real error",
			"failed to connect to `user=postgres database=nosuchdb`:\n\t127.0.0.1:5432 (127.0.0.1): tls error: server refused TLS connection\n\t127.0.0.1:5432 (127.0.0.1): server error: FATAL: database \"nosuchdb\" does not exist (SQLSTATE 3D000)",
			"failed to connect to `user=postgres database=nosuchdb`:\n\t127.0.0.1:5432 (127.0.0.1): server error: FATAL: database \"nosuchdb\" does not exist (SQLSTATE 3D000)"},
		{"the same dial error twice",
			"failed to connect to `user=x database=y`:\n\t127.0.0.1:1 (127.0.0.1): dial error: dial tcp 127.0.0.1:1: connect: connection refused\n\t127.0.0.1:1 (127.0.0.1): dial error: dial tcp 127.0.0.1:1: connect: connection refused",
			"failed to connect to `user=x database=y`:\n\t127.0.0.1:1 (127.0.0.1): dial error: dial tcp 127.0.0.1:1: connect: connection refused"},
		{"only the tls refusal (sslmode=require)",
			"failed to connect to `user=x database=y`:\n\th (1.2.3.4): tls error: server refused TLS connection",
			"failed to connect to `user=x database=y`:\n\th (1.2.3.4): tls error: server refused TLS connection"},
		{"one line", "failed to connect: boom", "failed to connect: boom"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := errors.New(c.in)
			got := tidyConnectError(in)
			if got.Error() != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
			if !errors.Is(got, in) {
				t.Error("the tidied error does not unwrap to the original")
			}
		})
	}
}

// TestDisconnectedNotFileErrors: a system error from writing a file (a
// full disk on a directory target) is not a lost source connection, though
// syscall.Errno has the methods of net.Error; the same errno from a
// network operation is.
func TestDisconnectedNotFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"full disk", &os.PathError{Op: "write", Path: "out/people.jsonl", Err: syscall.ENOSPC}, false},
		{"full disk, wrapped", fmt.Errorf("write people.jsonl: %w", &os.PathError{Op: "write", Path: "out/people.jsonl", Err: syscall.ENOSPC}), false},
		{"file too large", fmt.Errorf("sync: %w", syscall.EFBIG), false},
		{"bare errno", syscall.EIO, false},
		{"connection reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true},
		{"unexpected EOF", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
	} {
		if got := Disconnected(tc.err); got != tc.want {
			t.Errorf("%s: Disconnected(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
