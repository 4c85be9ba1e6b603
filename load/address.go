package load

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/denorm/denorm/internal/connstr"
)

// Timeouts of a server target when its URI does not set them (the
// driver's own defaults are 30 s each, and no limit on operations): a host
// that does not answer, or answers nothing, fails the command within
// seconds, and an operation on a connection that went silent (half-open)
// fails instead of hanging. The URI's connectTimeoutMS,
// serverSelectionTimeoutMS and timeoutMS override them.
const (
	// DefaultConnectTimeout bounds opening one connection: TCP, TLS and
	// the MongoDB handshake.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultServerSelectionTimeout bounds waiting for a usable server
	// before each operation (the first ping included).
	DefaultServerSelectionTimeout = 10 * time.Second
	// DefaultOperationTimeout bounds each operation (the driver's
	// timeoutMS): a bulk write, a delete, a checkpoint read or write, each
	// batch of a scan. Generous: the slowest legitimate operation is a
	// bulk write of one capped batch, or a delete on a server that scans
	// the collection for it (FerretDB). A timed-out write is retried like
	// any network error (--retry-for).
	DefaultOperationTimeout = 10 * time.Minute
)

// uriLike is a string that looks like a URI (scheme:/...), not a path.
// One-letter schemes are left out: C:/out is a Windows path.
var uriLike = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.\-]+:/`)

// hostPortLike is host:port or host:port/db without a scheme.
var hostPortLike = regexp.MustCompile(`^[A-Za-z0-9.\-\[\]:]*[A-Za-z0-9\]]:[0-9]+(/[^/]*)?$`)

// kvLike is a PostgreSQL key=value connection string given as a target.
var kvLike = regexp.MustCompile(`(?i)(^|\s)(host|hostaddr|dbname|user|password|port|sslmode)\s*=`)

// ParseTarget tells what a --target names: a MongoDB-wire server (a
// mongodb:// or mongodb+srv:// URI, scheme in any case: server true) or a
// directory (any other path). Anything that looks like a URI of another
// scheme (postgres://, http://, s3://, file://, mongo://) or like a
// PostgreSQL connection string is an error, never a directory named after
// it. Errors never hold a password.
func ParseTarget(target string) (cs connstr.String, server bool, err error) {
	cs = connstr.Parse(target)
	switch cs.Form() {
	case connstr.URL:
		switch cs.Scheme() {
		case "mongodb", "mongodb+srv":
			if err := cs.Problem(); err != nil {
				return cs, true, fmt.Errorf("target URI %s: %w", cs, err)
			}
			return cs, true, nil
		case "postgres", "postgresql":
			return cs, false, fmt.Errorf("target %s is a PostgreSQL URL: the target is a MongoDB-wire server (mongodb://host:port/db) or a directory (give the PostgreSQL database with --source)", cs)
		case "file":
			return cs, false, fmt.Errorf("target %s: give a directory as a path (./out, /data/out), not a file:// URL", cs)
		default:
			return cs, false, fmt.Errorf("target %s: unknown scheme %q: give mongodb://host:port/db, mongodb+srv://host/db, or a directory path", cs, cs.Scheme())
		}
	case connstr.KeywordValue:
		if kvLike.MatchString(target) {
			return cs, false, fmt.Errorf("target %s looks like a PostgreSQL connection string: the target is a MongoDB-wire server (mongodb://host:port/db) or a directory", cs)
		}
	}
	if hostPortLike.MatchString(target) {
		return cs, false, fmt.Errorf("target %s looks like a server address without a scheme: give mongodb://%s (with the database in the path), or ./%s for a directory", cs, target, target)
	}
	if uriLike.MatchString(target) {
		return cs, false, fmt.Errorf("target %s looks like a URI but is not one denorm knows: give mongodb://host:port/db, mongodb+srv://host/db, or a directory path (./%s if it is one)", cs, target)
	}
	return cs, false, nil
}

// clientOptions are the driver's options for a server target's URI: the
// URI (scheme in lower case, which the driver needs) and denorm's default
// timeouts where the URI sets none. The operation timeout applies to each
// call (each Next of a cursor gets its own, in this driver).
func clientOptions(cs connstr.String) *options.ClientOptions {
	o := options.Client().ApplyURI(cs.WithLowerScheme())
	if _, set := cs.Param("connectTimeoutMS"); !set {
		o.SetConnectTimeout(DefaultConnectTimeout)
	}
	if _, set := cs.Param("serverSelectionTimeoutMS"); !set {
		o.SetServerSelectionTimeout(DefaultServerSelectionTimeout)
	}
	if _, set := cs.Param("timeoutMS"); !set {
		o.SetTimeout(DefaultOperationTimeout)
	}
	return o
}

// opTimeout is the bound of one operation on the server at cs: the URI's
// timeoutMS (0: none), else DefaultOperationTimeout.
func opTimeout(cs connstr.String) time.Duration {
	if v, set := cs.Param("timeoutMS"); set {
		if ms, err := strconv.Atoi(v); err == nil && ms >= 0 {
			return time.Duration(ms) * time.Millisecond
		}
	}
	return DefaultOperationTimeout
}

// bound is ctx bounded by d (d > 0: an operation's timeout). The driver
// honours a context's deadline before the client's timeoutMS, and the
// runner's contexts carry long deadlines of their own (a write may be
// retried for --retry-for), so each operation gets its bound here too.
func bound(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}
