package extract

import "strings"

// tidyConnectError shortens pgx's error for a failed connection. With
// sslmode=prefer (libpq's default) pgx tries TLS first, then plain text,
// and reports both attempts: a server without TLS adds "tls error: server
// refused TLS connection" to every connection error, and an unreachable
// one gives the same dial error twice. The tidied text keeps each
// distinct cause once and the TLS refusal only when it is the only cause;
// the error still unwraps to pgx's.
func tidyConnectError(err error) error {
	msg := err.Error()
	lines := strings.Split(msg, "\n")
	if len(lines) < 3 {
		return err
	}
	kept := []string{lines[0]}
	seen := map[string]bool{}
	refused := ""
	for _, l := range lines[1:] {
		switch {
		case strings.Contains(l, "tls error: server refused TLS connection"):
			refused = l
		case !seen[l]:
			seen[l] = true
			kept = append(kept, l)
		}
	}
	if len(kept) == 1 && refused != "" {
		kept = append(kept, refused)
	}
	if len(kept) == len(lines) {
		return err
	}
	return tidied{msg: strings.Join(kept, "\n"), err: err}
}

// tidied is an error with a shorter message that unwraps to the original.
type tidied struct {
	msg string
	err error
}

func (t tidied) Error() string { return t.msg }
func (t tidied) Unwrap() error { return t.err }
