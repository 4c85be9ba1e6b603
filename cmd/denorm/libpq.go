package main

import "os"

// libpqVars are the environment variables of libpq (and psql, pg_dump)
// that name a PostgreSQL database and how to log in; PGPASSFILE and
// PGSERVICEFILE only say where .pgpass and the service file are.
var libpqVars = []string{"PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGPASSWORD", "PGSERVICE", "PGSSLMODE", "PGAPPNAME", "PGCONNECT_TIMEOUT"}

// libpqSet reports whether any PG* variable is set: then, with no source
// URL given (no --source, no DENORM_SOURCE), the source is read as libpq
// reads it, from the PG* variables, the service file and .pgpass
// (extract.ParseSource of an empty string).
func libpqSet() bool {
	for _, v := range libpqVars {
		if os.Getenv(v) != "" {
			return true
		}
	}
	return false
}
