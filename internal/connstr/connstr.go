// Package connstr reads connection strings — PostgreSQL URLs and
// keyword/value strings, MongoDB URIs, any scheme://... URL — far enough to
// know where their secrets sit, so that denorm can show them and quote them
// in messages without the secrets. It imports no driver and does no I/O.
//
// Redaction parses; it never replaces a password's text wherever it occurs:
// a one-letter password must not garble every message holding that letter,
// and a password equal to the user name must not show as a masked user
// name. What is masked is a secret in its place: the password of a URL's
// user info (user:PASSWORD@), a query parameter or keyword whose name says
// it holds a secret (password=, sslpassword=, tlsCertificateKeyFilePassword=,
// an AWS session token), in the raw spelling and percent-decoded.
//
// Malformed strings are read leniently, masking more rather than less: in a
// URL, everything from the first ':' after scheme:// to the last '@' of
// the string is the password, even when an '@', '/' or '?' inside it was
// not percent-encoded (the drivers disagree about such strings). A URL
// whose path or query holds an '@' (application_name=a@b) is therefore
// shown with everything from that ':' to that '@' masked. A driver's parse
// error may quote the fragment it stumbled on: ParseError drops quoted
// fragments when the string holds a secret.
package connstr

import (
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Mask replaces every secret.
const Mask = "xxxxx"

// Form is the syntax of a connection string.
type Form int

const (
	// Plain is neither a URL nor keyword/value: a directory path, or
	// nothing.
	Plain Form = iota
	// URL is scheme://[user[:password]@]hosts[/path][?query].
	URL
	// KeywordValue is PostgreSQL's key=value form (libpq's conninfo).
	KeywordValue
)

// String is a connection string with its secrets located. The zero value
// is the empty string.
type String struct {
	raw     string
	form    Form
	scheme  string // lower case, URL form only
	secrets []span // byte ranges of raw that hold secret values, sorted
	// contexts are the secrets in their place, as messages may quote them:
	// "user:password@", "password=value".
	contexts []replacement
	params   map[string]string // lower-case key -> decoded value
	path     string            // a URL's path after the hosts, decoded, without the leading '/'
	problem  string
}

type span struct{ from, to int }

type replacement struct{ find, repl string }

var schemeRe = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.\-]*)://`)

// Parse locates the secrets of s. It never fails: a string that is not a
// valid connection string is read as far as it goes (see the package
// comment), and Problem says what is wrong with its secret parts.
func Parse(s string) String {
	c := String{raw: s, params: map[string]string{}}
	switch m := schemeRe.FindStringSubmatch(s); {
	case m != nil:
		c.form, c.scheme = URL, strings.ToLower(m[1])
		c.parseURL(len(m[0]))
	case strings.Contains(s, "="):
		c.form = KeywordValue
		c.parseKeywordValue()
	default:
		c.form = Plain
	}
	slices.SortFunc(c.secrets, func(a, b span) int { return a.from - b.from })
	slices.SortStableFunc(c.contexts, func(a, b replacement) int { return len(b.find) - len(a.find) })
	return c
}

// Raw is the string as given.
func (c String) Raw() string { return c.raw }

// Form is the string's syntax.
func (c String) Form() Form { return c.form }

// Scheme is a URL's scheme in lower case ("postgres", "mongodb+srv"), ""
// for other forms.
func (c String) Scheme() string { return c.scheme }

// HasSecret reports whether the string holds a secret (a non-empty one).
func (c String) HasSecret() bool { return len(c.secrets) > 0 }

// Param returns a URL query parameter's or a keyword's value (keys compare
// case-insensitively; the last occurrence wins, as in the drivers).
func (c String) Param(key string) (string, bool) {
	v, ok := c.params[strings.ToLower(key)]
	return v, ok
}

// Problem describes what is wrong with the string's secret parts (an
// invalid percent escape in a URL's password, an unterminated quote), in
// words that never quote them; nil when nothing is. Callers check it
// before handing the string to a driver, whose parse errors may quote the
// fragment they stumbled on.
func (c String) Problem() error {
	if c.problem == "" {
		return nil
	}
	return errors.New(c.problem)
}

// WithLowerScheme returns the string with a URL's scheme in lower case
// (MONGODB://h -> mongodb://h): schemes are case-insensitive (RFC 3986),
// the drivers compare them exactly.
func (c String) WithLowerScheme() string {
	if c.form != URL {
		return c.raw
	}
	return c.scheme + c.raw[len(c.scheme):]
}

// Path is a URL's path after the hosts, percent-decoded and without its
// leading '/' (a MongoDB URI's database): "" for other forms.
func (c String) Path() string { return c.path }

// Redacted is the string with every secret replaced by Mask.
func (c String) Redacted() string {
	if !c.HasSecret() {
		return c.raw
	}
	var b strings.Builder
	last := 0
	for _, s := range c.secrets {
		if s.from < last {
			// Overlapping secrets (an over-long password span holding a
			// secret parameter): mask the union.
			last = max(last, s.to)
			continue
		}
		b.WriteString(c.raw[last:s.from])
		b.WriteString(Mask)
		last = s.to
	}
	b.WriteString(c.raw[last:])
	return b.String()
}

// String is Redacted: printing a String never shows its secrets.
func (c String) String() string { return c.Redacted() }

// Redact removes the string's secrets from a message: the whole string
// becomes Redacted, and each secret in its place (user:password@,
// password=value, raw or percent-decoded) is masked. Other text, including
// the password's letters anywhere else, is left alone.
func (c String) Redact(text string) string {
	if !c.HasSecret() || text == "" {
		return text
	}
	text = strings.ReplaceAll(text, c.raw, c.Redacted())
	for _, r := range c.contexts {
		text = strings.ReplaceAll(text, r.find, r.repl)
	}
	return text
}

// RedactError is err with Redact applied to its message; errors.Is and As
// still see err. nil stays nil, and an error that holds no secret is
// returned as it is.
func (c String) RedactError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if red := c.Redact(msg); red != msg {
		return &redacted{msg: red, err: err}
	}
	return err
}

// quoted are the fragments a driver's message quotes.
var quoted = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|`[^`]*`")

// ParseError is a driver's failure to parse c, fit to print: c's secrets
// are masked (RedactError), and, when c holds a secret, every quoted
// fragment of the message becomes "...": a driver quotes what it
// stumbled on, which may be a piece of a password it read as something
// else (a malformed URL's password taken for a host, a port or a query).
func (c String) ParseError(err error) error {
	if err == nil || !c.HasSecret() {
		return err
	}
	msg := quoted.ReplaceAllString(c.Redact(err.Error()), `"..."`)
	return &redacted{msg: msg, err: err}
}

type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }

// secretKey reports whether a parameter or keyword holds a secret.
func secretKey(key string) bool {
	k := strings.ToLower(key)
	return strings.Contains(k, "password") || strings.Contains(k, "passwd") ||
		strings.Contains(k, "secret") || strings.Contains(k, "token")
}

// addSecret records raw[from:to] as a secret, and the context around it
// (raw[cfrom:cto], which contains it) as messages may quote it; decoded is
// the secret's decoded value, also masked in that context.
func (c *String) addSecret(from, to, cfrom, cto int, decoded string) {
	if from >= to {
		return
	}
	c.secrets = append(c.secrets, span{from, to})
	before, after := c.raw[cfrom:from], c.raw[to:cto]
	c.contexts = append(c.contexts, replacement{c.raw[cfrom:cto], before + Mask + after})
	if decoded != "" && decoded != c.raw[from:to] {
		c.contexts = append(c.contexts, replacement{before + decoded + after, before + Mask + after})
	}
}

// parseURL reads scheme://userinfo@hosts/path?query; start is the offset
// after "://".
func (c *String) parseURL(start int) {
	rest := c.raw[start:]
	// The hosts begin after the user info, which ends at the first '@'
	// before any '/' (libpq's and pgx's reading).
	hosts := 0
	if a := strings.IndexAny(rest, "@/"); a >= 0 && rest[a] == '@' {
		hosts = a + 1
	}
	// The password, though, runs to the last '@' of the string: when an
	// '@' follows a '/' or another '@', the drivers disagree on where the
	// password ends (MongoDB's stops at the first '@' anywhere), and a
	// password with an unencoded '/' or '@' is still a password.
	if a := strings.IndexByte(rest, '@'); a >= 0 {
		end := strings.LastIndexByte(rest, '@')
		if colon := strings.IndexByte(rest[:end], ':'); colon >= 0 && colon+1 < end {
			pw := rest[colon+1 : end]
			dec, err := url.PathUnescape(pw)
			if err != nil {
				c.problem = "the password in the URL holds a % that does not start a %XX escape: percent-encode it (% as %25, @ as %40, / as %2F, : as %3A, ? as %3F, # as %23)"
				dec = ""
			}
			c.addSecret(start+colon+1, start+end, start, start+end+1, dec)
		}
	}
	q := strings.IndexByte(rest[hosts:], '?')
	if p := strings.IndexByte(rest[hosts:], '/'); p >= 0 && (q < 0 || p < q) {
		path := rest[hosts+p+1:]
		if i := strings.IndexAny(path, "?#"); i >= 0 {
			path = path[:i]
		}
		if dec, err := url.PathUnescape(path); err == nil {
			c.path = dec
		} else {
			c.path = path
		}
	}
	if q < 0 {
		return
	}
	qstart := start + hosts + q + 1
	query := c.raw[qstart:]
	if h := strings.IndexByte(query, '#'); h >= 0 {
		query = query[:h]
	}
	off := qstart
	for _, item := range strings.FieldsFunc(query, func(r rune) bool { return r == '&' || r == ';' }) {
		i := strings.Index(c.raw[off:], item) + off
		off = i + len(item)
		k, v, ok := strings.Cut(item, "=")
		key, err := url.QueryUnescape(k)
		if err != nil {
			key = k
		}
		dec, err := url.QueryUnescape(v)
		if err != nil {
			dec = v
		}
		c.params[strings.ToLower(key)] = dec
		if !ok || v == "" {
			continue
		}
		vfrom := i + len(k) + 1
		switch {
		case secretKey(key):
			c.addSecret(vfrom, vfrom+len(v), i, i+len(item), dec)
		case strings.EqualFold(key, "authMechanismProperties") && strings.Contains(strings.ToUpper(dec), "TOKEN"):
			// AWS_SESSION_TOKEN:... among other properties: mask them all.
			c.addSecret(vfrom, vfrom+len(v), i, i+len(item), dec)
		}
	}
}

const kvSpace = " \t\n\r\v\f"

// parseKeywordValue reads PostgreSQL's key=value string the way libpq
// does: values unquoted (to the next space; backslash escapes) or in
// single quotes (\' and \\ escapes). A key holding a space keeps its last
// word, so that "junk password=x" still finds the password.
func (c *String) parseKeywordValue() {
	s := c.raw
	i := len(s) - len(strings.TrimLeft(s, kvSpace))
	for i < len(s) {
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			return
		}
		keyText := strings.TrimRight(s[i:i+eq], kvSpace)
		kfrom := i + strings.LastIndexAny(keyText, kvSpace) + 1
		key := s[kfrom : i+len(keyText)]
		j := i + eq + 1
		j += len(s[j:]) - len(strings.TrimLeft(s[j:], kvSpace))
		vfrom, vto := j, j
		var val string
		if j < len(s) && s[j] == '\'' {
			k := j + 1
			for ; k < len(s) && s[k] != '\''; k++ {
				if s[k] == '\\' {
					k++
				}
			}
			if k < len(s) {
				val, vto = unescape(s[j+1:k]), k+1
			} else {
				if secretKey(key) {
					c.problem = "the password's quoted value in the connection string has no closing quote"
				}
				val, vto = unescape(s[j+1:]), len(s)
			}
		} else {
			k := j
			for ; k < len(s) && !strings.ContainsRune(kvSpace, rune(s[k])); k++ {
				if s[k] == '\\' {
					k++
				}
			}
			k = min(k, len(s))
			val, vto = unescape(s[j:k]), k
		}
		next := vto
		c.params[strings.ToLower(key)] = val
		if secretKey(key) {
			c.addSecret(vfrom, vto, kfrom, vto, val)
		}
		i = next
		i += len(s[i:]) - len(strings.TrimLeft(s[i:], kvSpace))
	}
}

// unescape applies libpq's backslash rule: a backslash takes the next
// character literally.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			if i == len(s) {
				break
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Arg is how a command that a message suggests (resume, restart) should
// give a connection string: the value itself when it came from a flag and
// holds no secret (viaEnv false: the caller quotes it for the shell), else
// "$ENV" in double quotes (viaEnv true), so that the suggestion can be
// pasted as it is — a masked URL would not connect. When the value came
// from a flag, the caller says that env must hold it.
func Arg(value string, fromEnv bool, env string) (arg string, viaEnv bool) {
	if fromEnv || Parse(value).HasSecret() {
		return `"$` + env + `"`, true
	}
	return value, false
}
