package extract

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// startOver is the advice for a job whose change capture is gone: the
// changes since its last pass cannot be recovered.
func startOver(job string) string {
	return fmt.Sprintf("the changes since the job's last pass cannot be recovered: start the job over "+
		"(`denorm sync --drop-slot --job %s`, then `denorm sync` makes a new initial copy, or run a new `denorm migrate`)", job)
}

// SlotMissingError: the job's replication slot (or its publication) does
// not exist: it was dropped, or the job never started.
type SlotMissingError struct {
	Job, Name string
	// Publication is set when the slot exists but its publication is gone.
	Publication bool
}

func (e *SlotMissingError) Error() string {
	what := "replication slot"
	if e.Publication {
		what = "publication"
	}
	return fmt.Sprintf("sync job %q: %s %s does not exist (dropped, or the job never started); %s",
		e.Job, what, e.Name, startOver(e.Job))
}

// SlotInvalidError: PostgreSQL invalidated the job's slot (it removed WAL
// the slot still needed, beyond max_slot_wal_keep_size, or a recovery
// conflict on a standby): the slot cannot stream anymore.
type SlotInvalidError struct {
	Job, Slot string
	// WALStatus is pg_replication_slots.wal_status ("lost"); Conflicting its
	// PostgreSQL 16 conflicting flag.
	WALStatus   string
	Conflicting bool
	// Detail is the server's explanation, when it gave one.
	Detail string
}

func (e *SlotInvalidError) Error() string {
	why := "it was invalidated"
	switch {
	case e.Detail != "":
		why += " (" + e.Detail + ")"
	case e.Conflicting:
		why += " (a recovery conflict)"
	case e.WALStatus == "lost":
		why += " (wal_status lost: the server removed WAL it still needed; raise max_slot_wal_keep_size or sync more often)"
	}
	return fmt.Sprintf("sync job %q: replication slot %s can no longer stream: %s; %s", e.Job, e.Slot, why, startOver(e.Job))
}

// SlotExistsError: Setup found the job's slot already there (a job that
// started before). Continue it with Stream from its checkpoint, or Drop it
// to start over.
type SlotExistsError struct{ Job, Slot string }

func (e *SlotExistsError) Error() string {
	return fmt.Sprintf("sync job %q: replication slot %s already exists: continue the job (`denorm sync --job %s`), "+
		"or drop it to start over (`denorm sync --drop-slot --job %s`)", e.Job, e.Slot, e.Job, e.Job)
}

// SlotBusyError: another process streams from the job's slot now.
type SlotBusyError struct {
	Job, Slot string
	PID       int
}

func (e *SlotBusyError) Error() string {
	return fmt.Sprintf("sync job %q: replication slot %s is in use by server process %d: another `denorm sync` of this job is running; stop it first",
		e.Job, e.Slot, e.PID)
}

// SlotAheadError: the slot confirmed a position past the one the job
// asked to resume from, so the changes between were consumed without
// reaching the job's checkpoint (another reader of the slot, or a
// checkpoint restored from an older copy).
type SlotAheadError struct {
	Job, Slot       string
	From, Confirmed LSN
}

func (e *SlotAheadError) Error() string {
	return fmt.Sprintf("sync job %q: replication slot %s has confirmed %s, past the job's checkpoint at %s: the changes between were consumed elsewhere; %s",
		e.Job, e.Slot, e.Confirmed, e.From, startOver(e.Job))
}

// WALLevelError: the server's wal_level is not logical.
type WALLevelError struct{ Level string }

func (e *WALLevelError) Error() string {
	return fmt.Sprintf("the source has wal_level = %s; logical replication needs wal_level = logical: "+
		"run `ALTER SYSTEM SET wal_level = logical` and restart PostgreSQL (managed services: the provider's logical replication setting), "+
		"or use --method diff", e.Level)
}

// PrivilegeError: the source user lacks something logical replication
// needs; Fix says what to grant.
type PrivilegeError struct {
	Fix string
	Err error
}

func (e *PrivilegeError) Error() string { return fmt.Sprintf("%v: %s", e.Err, e.Fix) }
func (e *PrivilegeError) Unwrap() error { return e.Err }

var (
	activePID = regexp.MustCompile(`active for PID (\d+)`)
)

// explain turns the server's errors about slots, publications, settings
// and privileges into the typed errors above; others pass unchanged.
func (l *Logical) explain(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	msg := pe.Message
	switch {
	case pe.Code == "42704" && strings.Contains(msg, "replication slot"):
		return &SlotMissingError{Job: l.Job, Name: l.Name}
	case pe.Code == "42704" && strings.Contains(msg, "publication"):
		return &SlotMissingError{Job: l.Job, Name: l.Name, Publication: true}
	case pe.Code == "42710" && strings.Contains(msg, "replication slot"):
		return &SlotExistsError{Job: l.Job, Slot: l.Name}
	case pe.Code == "55006" && strings.Contains(msg, "replication slot"):
		pid := 0
		if m := activePID.FindStringSubmatch(msg); m != nil {
			pid, _ = strconv.Atoi(m[1])
		}
		return &SlotBusyError{Job: l.Job, Slot: l.Name, PID: pid}
	case pe.Code == "55000" && strings.Contains(msg, "wal_level"):
		return &WALLevelError{Level: "below logical"}
	case pe.Code == "55000" && (strings.Contains(msg, "can no longer get changes") || strings.Contains(pe.Detail, "invalidated")):
		return &SlotInvalidError{Job: l.Job, Slot: l.Name, Detail: pe.Detail}
	case pe.Code == "42501" && (strings.Contains(msg, "replication") || strings.Contains(msg, "walsender")):
		return &PrivilegeError{Err: err, Fix: "the user needs the REPLICATION attribute: a superuser runs `ALTER ROLE <user> REPLICATION` (managed services: grant the provider's replication role)"}
	case pe.Code == "42501" && strings.Contains(msg, "must be owner of publication"):
		return &PrivilegeError{Err: err, Fix: "publication " + l.Name + " belongs to another user: its owner runs `ALTER PUBLICATION " + l.Name + " OWNER TO <user>`, or drops it"}
	case pe.Code == "42501" && strings.Contains(msg, "must be owner"):
		return &PrivilegeError{Err: err, Fix: "only a table's owner can add it to a publication: run sync as the tables' owner, " +
			"or have the owner create the publication `" + l.Name + "` for the mapped tables and transfer it to the sync user"}
	case pe.Code == "42501" && strings.Contains(msg, "database"):
		return &PrivilegeError{Err: err, Fix: "creating a publication needs CREATE on the database: `GRANT CREATE ON DATABASE <db> TO <user>`"}
	case pe.Code == "28000" && strings.Contains(msg, "replication"):
		return &PrivilegeError{Err: err, Fix: "pg_hba.conf must allow the user's replication connections: add a `host replication <user> <address> <method>` line and reload"}
	case pe.Code == "53400" && strings.Contains(msg, "replication slots"):
		return fmt.Errorf("%w: raise max_replication_slots on the source (a restart), or drop unused slots (pg_replication_slots)", err)
	case pe.Code == "53300" && strings.Contains(msg, "max_wal_senders"):
		return fmt.Errorf("%w: raise max_wal_senders on the source (a restart)", err)
	}
	return err
}
