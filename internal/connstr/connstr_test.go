package connstr

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestRedacted(t *testing.T) {
	cases := []struct {
		name, in, want string
		secret         bool
	}{
		{"no password", "postgres://alice@db.example/app", "postgres://alice@db.example/app", false},
		{"url password", "postgres://alice:s3cret@db:5432/app?sslmode=disable", "postgres://alice:xxxxx@db:5432/app?sslmode=disable", true},
		{"one letter", "postgres://ee:e@e/e", "postgres://ee:xxxxx@e/e", true},
		{"same as user", "mongodb://alice:alice@h/alice", "mongodb://alice:xxxxx@h/alice", true},
		{"escaped specials", "postgres://u:p%40ss%2Fw%3Ad@h/db", "postgres://u:xxxxx@h/db", true},
		{"unescaped at", "mongodb://u:p@ss@h:27017/db", "mongodb://u:xxxxx@h:27017/db", true},
		{"unescaped slash", "postgres://u:pa/ss@h/db", "postgres://u:xxxxx@h/db", true},
		{"unescaped question mark", "mongodb://u:pa?ss@h/db", "mongodb://u:xxxxx@h/db", true},
		{"bad escape", "postgres://u:p%zzsecret@h/db", "postgres://u:xxxxx@h/db", true},
		{"empty password", "postgres://u:@h/db", "postgres://u:@h/db", false},
		{"query password", "postgres://u@h/db?sslmode=disable&password=hunter2", "postgres://u@h/db?sslmode=disable&password=xxxxx", true},
		{"query both", "mongodb://u:a@h/db?password=b&appName=x", "mongodb://u:xxxxx@h/db?password=xxxxx&appName=x", true},
		{"query encoded key", "postgres://h/db?pass%77ord=x1", "postgres://h/db?pass%77ord=xxxxx", true},
		{"tls key password", "mongodb://h/db?tls=true&tlsCertificateKeyFilePassword=k3y", "mongodb://h/db?tls=true&tlsCertificateKeyFilePassword=xxxxx", true},
		{"aws token", "mongodb://h/db?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:tok", "mongodb://h/db?authMechanism=MONGODB-AWS&authMechanismProperties=xxxxx", true},
		{"upper scheme", "MONGODB://u:pw@h/db", "MONGODB://u:xxxxx@h/db", true},
		{"srv", "mongodb+srv://u:pw@cluster.example.net/db", "mongodb+srv://u:xxxxx@cluster.example.net/db", true},
		{"ipv6", "postgres://u:pw@[::1]:5432/db", "postgres://u:xxxxx@[::1]:5432/db", true},
		{"kv plain", "host=h user=u password=s3cret dbname=d", "host=h user=u password=xxxxx dbname=d", true},
		{"kv quoted", `host=h password='my s\'ecret \\ x' user=u`, "host=h password=xxxxx user=u", true},
		{"kv spaces around =", "host=h password = 'a b' user=u", "host=h password = xxxxx user=u", true},
		{"kv escaped space", `password=a\ b user=u`, "password=xxxxx user=u", true},
		{"kv unterminated", "host=h password='abc def", "host=h password=xxxxx", true},
		{"kv sslpassword", "host=h sslpassword=k user=u", "host=h sslpassword=xxxxx user=u", true},
		{"kv junk key", "junk password=x1 user=u", "junk password=xxxxx user=u", true},
		{"kv no password", "host=h user=u", "host=h user=u", false},
		{"directory", "./out/dir", "./out/dir", false},
		{"empty", "", "", false},
		// A URL without credentials but an '@' after a ':' in its path or
		// query is masked from the ':' on: more rather than less.
		{"at in query", "postgres://h:5432/db?application_name=a@b", "postgres://h:xxxxx@b", true},
		{"at in query, no colon", "postgres://h/db?application_name=a@b", "postgres://h/db?application_name=a@b", false},
		{"at in query after a password", "mongodb://u:pw@h/db?appName=a@b", "mongodb://u:xxxxx@b", true},
		{"overlapping secrets", "postgres://u:pw@h/db?password=abc@def", "postgres://u:xxxxx", true},
		{"slash, at and more in the password", `postgres://u:p@ss:w/rd?#%&=@h/db`, "postgres://u:xxxxx@h/db", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := Parse(c.in)
			if got := s.Redacted(); got != c.want {
				t.Errorf("Redacted(%q) = %q, want %q", c.in, got, c.want)
			}
			if s.HasSecret() != c.secret {
				t.Errorf("HasSecret(%q) = %v, want %v", c.in, s.HasSecret(), c.secret)
			}
			if got := fmt.Sprint(s); got != c.want {
				t.Errorf("fmt.Sprint = %q, want the redacted form", got)
			}
		})
	}
}

func TestRedactMessages(t *testing.T) {
	cases := []struct {
		name, conn, msg, want string
	}{
		{"whole string", "postgres://u:pw1@h/db", `cannot parse "postgres://u:pw1@h/db": bad`, `cannot parse "postgres://u:xxxxx@h/db": bad`},
		{"userinfo in place", "postgres://u:pw1@h/db", "dial //u:pw1@h failed", "dial //u:xxxxx@h failed"},
		{"decoded userinfo", "postgres://u:p%40w@h/db", "user u:p@w@h", "user u:xxxxx@h"},
		// The letter e is everywhere in a message; only the password goes.
		{"one letter", "postgres://ee:e@e/e", "connect to postgres://ee:e@e/e: the server refused the connection", "connect to postgres://ee:xxxxx@e/e: the server refused the connection"},
		// A password equal to the user name: the user name stays visible,
		// so nothing tells that they are equal.
		{"same as user", "postgres://alice:alice@h/db", `failed to connect to user=alice database=db: password authentication failed for user "alice"`, `failed to connect to user=alice database=db: password authentication failed for user "alice"`},
		{"kv", "host=h user=u password='a b'", "cannot parse `host=h user=u password='a b'`", "cannot parse `host=h user=u password=xxxxx`"},
		{"kv decoded", "host=h password='a b'", "settings: password=a b", "settings: password=xxxxx"},
		{"query", "postgres://h/db?password=zz9", "unknown parameter password=zz9", "unknown parameter password=xxxxx"},
		{"no secret", "postgres://u@h/db", "postgres://u@h/db refused", "postgres://u@h/db refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Parse(c.conn).Redact(c.msg); got != c.want {
				t.Errorf("Redact(%q) = %q, want %q", c.msg, got, c.want)
			}
		})
	}
}

func TestRedactError(t *testing.T) {
	s := Parse("postgres://u:pw9@h/db")
	base := fmt.Errorf("open postgres://u:pw9@h/db: %w", io.ErrUnexpectedEOF)
	err := s.RedactError(base)
	if strings.Contains(err.Error(), "pw9") || !strings.Contains(err.Error(), "u:xxxxx@h") {
		t.Errorf("RedactError = %q", err)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Error("RedactError hides the wrapped error from errors.Is")
	}
	if s.RedactError(nil) != nil {
		t.Error("RedactError(nil) is not nil")
	}
	if plain := errors.New("refused"); s.RedactError(plain) != plain {
		t.Error("an error without secrets is not returned as it is")
	}
}

func TestProblem(t *testing.T) {
	for _, c := range []struct {
		in, want string
	}{
		{"postgres://u:p%zzsecret@h/db", "% that does not start a %XX escape"},
		{"host=h password='abc", "no closing quote"},
		{"postgres://u:p%41@h/db", ""},
	} {
		err := Parse(c.in).Problem()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("Problem(%q) = %v, want none", c.in, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("Problem(%q) = %v, want %q", c.in, err, c.want)
		case err != nil && (strings.Contains(err.Error(), "zz") || strings.Contains(err.Error(), "abc")):
			t.Errorf("Problem(%q) = %v quotes the password", c.in, err)
		}
	}
}

func TestParamsAndScheme(t *testing.T) {
	s := Parse("MongoDB+SRV://u:pw@h/db?connectTimeoutMS=5&ServerSelectionTimeoutMS=7")
	if s.Scheme() != "mongodb+srv" || s.Form() != URL {
		t.Errorf("scheme %q form %v", s.Scheme(), s.Form())
	}
	if v, ok := s.Param("connecttimeoutms"); !ok || v != "5" {
		t.Errorf("connectTimeoutMS = %q %v", v, ok)
	}
	if v, ok := s.Param("serverSelectionTimeoutMS"); !ok || v != "7" {
		t.Errorf("serverSelectionTimeoutMS = %q %v", v, ok)
	}
	if got := s.WithLowerScheme(); got != "mongodb+srv://u:pw@h/db?connectTimeoutMS=5&ServerSelectionTimeoutMS=7" {
		t.Errorf("WithLowerScheme = %q", got)
	}
	if s.Path() != "db" {
		t.Errorf("Path = %q", s.Path())
	}
	if p := Parse("mongodb://h1:1,h2:2/my%20db?x=1").Path(); p != "my db" {
		t.Errorf("Path = %q", p)
	}
	if p := Parse("mongodb://u:pw@h/db?appName=a@b").Path(); p != "db" {
		t.Errorf("Path with an '@' in the query = %q", p)
	}
	if p := Parse("mongodb://h:1?x=/y").Path(); p != "" {
		t.Errorf("Path of a URL without one = %q", p)
	}
	kv := Parse("host=h connect_timeout = 3 password='x y'")
	if v, ok := kv.Param("connect_timeout"); !ok || v != "3" {
		t.Errorf("connect_timeout = %q %v", v, ok)
	}
	if v, _ := kv.Param("password"); v != "x y" {
		t.Errorf("password = %q", v)
	}
	if _, ok := Parse("postgres://h/db").Param("connect_timeout"); ok {
		t.Error("a parameter that is not there is found")
	}
}

func TestArg(t *testing.T) {
	for _, c := range []struct {
		value   string
		fromEnv bool
		arg     string
		viaEnv  bool
	}{
		{"postgres://u@h/db", false, "postgres://u@h/db", false},
		{"postgres://u:pw@h/db", false, `"$DENORM_SOURCE"`, true},
		{"postgres://u@h/db", true, `"$DENORM_SOURCE"`, true},
		{"host=h password=x", false, `"$DENORM_SOURCE"`, true},
	} {
		arg, viaEnv := Arg(c.value, c.fromEnv, "DENORM_SOURCE")
		if arg != c.arg || viaEnv != c.viaEnv {
			t.Errorf("Arg(%q, %v) = %q, %v; want %q, %v", c.value, c.fromEnv, arg, viaEnv, c.arg, c.viaEnv)
		}
	}
}

// FuzzRedacted checks, on any string, that the password the drivers would
// read from a URL's user info is never in the redacted form.
func FuzzRedacted(f *testing.F) {
	for _, s := range []string{"postgres://u:pw@h/db", "mongodb://a:b@c@d/e?password=f", "host=h password='x y'", "postgres://u:p%zz@h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := Parse(s)
		red := c.Redacted()
		if c.Form() != URL {
			return
		}
		rest := s[len(c.Scheme())+3:]
		// The user info as MongoDB's driver reads it: up to the first '@'.
		if a := strings.IndexByte(rest, '@'); a >= 0 {
			if user, pw, ok := strings.Cut(rest[:a], ":"); ok && pw != "" && strings.HasPrefix(red[len(c.Scheme())+3:], user+":"+pw+"@") {
				t.Errorf("Redacted(%q) = %q keeps password %q", s, red, pw)
			}
		}
	})
}

func TestParseError(t *testing.T) {
	s := Parse(`postgres://u:p@ss:w/rd?#%&=@h/db`)
	err := s.ParseError(errors.New("cannot parse `postgres://u:xxxxx@ss:xxxxxx@h/db`: failed to parse as URL (missing separator \"=\" in URI query parameter: \"#%\")"))
	want := `cannot parse "...": failed to parse as URL (missing separator "..." in URI query parameter: "...")`
	if err.Error() != want {
		t.Errorf("ParseError = %q, want %q", err, want)
	}
	plain := errors.New(`bad "host"`)
	if Parse("postgres://u@h/db").ParseError(plain) != plain {
		t.Error("a string without secrets: the error is not kept as it is")
	}
}
