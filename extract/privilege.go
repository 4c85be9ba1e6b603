package extract

import (
	"context"
	"fmt"
)

// RolePowers are what the role denorm connected as may do beyond reading
// the mapped tables, that a mapping's filters and sql: fields (SQL the
// user wrote, run inside denorm's READ ONLY transaction) could use: READ
// ONLY stops writes to tables, not these.
type RolePowers struct {
	// Role is the current user.
	Role string
	// Superuser: everything (pg_terminate_backend of any session, COPY ...
	// TO PROGRAM, reading any file).
	Superuser bool
	// Roles are the predefined roles it is a member of (directly or not)
	// that reach outside reading: pg_signal_backend (cancel or terminate
	// other sessions), pg_write_all_data, pg_execute_server_program,
	// pg_write_server_files, pg_read_server_files.
	Roles []string
}

// Dangerous reports whether the role holds any of those powers.
func (p RolePowers) Dangerous() bool { return p.Superuser || len(p.Roles) > 0 }

// poweredRoles are the predefined roles RolePowers lists, when the server
// has them (pg_write_all_data is PostgreSQL 14+).
var poweredRoles = []string{"pg_signal_backend", "pg_write_all_data", "pg_execute_server_program", "pg_write_server_files", "pg_read_server_files"}

// ReadRolePowers reads the powers of the connected role. For a superuser
// only Superuser is set: membership checks are all true for it.
func ReadRolePowers(ctx context.Context, q Querier) (RolePowers, error) {
	var p RolePowers
	rows, err := oneTrip{q}.Query(ctx, `
SELECT current_user::text, r.rolsuper,
       coalesce(array_agg(p.rolname::text ORDER BY p.rolname) FILTER (WHERE NOT r.rolsuper AND pg_has_role(current_user, p.oid, 'MEMBER')), '{}')
FROM pg_roles r
LEFT JOIN pg_roles p ON p.rolname = ANY($1::text[])
WHERE r.rolname = current_user
GROUP BY r.rolname, r.rolsuper`, poweredRoles)
	if err != nil {
		return p, fmt.Errorf("read the source role's privileges: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(&p.Role, &p.Superuser, &p.Roles); err != nil {
			return p, fmt.Errorf("read the source role's privileges: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return p, fmt.Errorf("read the source role's privileges: %w", err)
	}
	return p, nil
}
