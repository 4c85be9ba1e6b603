package main

import (
	"fmt"
	"strings"

	"github.com/denorm/denorm/internal/connstr"
)

// connArg is how a suggested command line gives a connection string
// (see connstr.Arg): the value, quoted for the shell, or "$ENV" when the
// value came from the environment or holds a password. note, when not
// empty, tells what ENV must hold: a masked URL would not connect, and
// the password is never printed.
func connArg(value string, fromEnv bool, env, flag string) (arg, note string) {
	arg, viaEnv := connstr.Arg(value, fromEnv, env)
	if !viaEnv {
		return shellQuote(arg), ""
	}
	if !fromEnv {
		note = fmt.Sprintf("first set %s to the %s you gave: it holds a password, which denorm never prints", env, flag)
	}
	return arg, note
}

// shellQuote quotes a word for a POSIX shell when it needs it.
func shellQuote(a string) string {
	if a == "" || strings.ContainsAny(a, " '\"$&;|<>()*?`\\#~!{}[]\t\n") {
		return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return a
}
