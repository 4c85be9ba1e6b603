package load

// Server leases. A lease is a generation of documents in _denorm, one per
// acquisition: {_id: "lease/<job id>/<gen>", lease: <job id>, gen, token,
// released, holder fields}. The newest generation is the lease. Taking it
// means inserting generation n+1, and the unique _id index lets exactly
// one of several racing runs insert it: inserts are the one write every
// MongoDB-wire server makes atomic (FerretDB 1.24 runs an update or a
// delete as a query followed by a write by _id, so a conditional update
// or delete could let two runs both win). Only the holder writes its own
// generation's document (heartbeats, release); a new holder deletes the
// older generations. A holder writes only while its last heartbeat is
// younger than the TTL (ValidUntil), and a run takes a lease over only
// once the stored expiry passed, so with host clocks that agree to within
// a fraction of the TTL two runs never both write.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// leasePrefix starts the _id of lease documents; job names cannot hold a
// "/", so no checkpoint has such an id.
const leasePrefix = "lease/"

type leaseDoc struct {
	ID        string    `bson:"_id"`
	Lease     string    `bson:"lease"`
	Gen       int64     `bson:"gen"`
	Token     string    `bson:"token"`
	Released  bool      `bson:"released"`
	Host      string    `bson:"host"`
	PID       int       `bson:"pid"`
	Command   string    `bson:"command"`
	Started   time.Time `bson:"started"`
	Heartbeat time.Time `bson:"heartbeat"`
	Expires   time.Time `bson:"expires"`
	// Space is where PID means something (procSpace), "" when unknown.
	Space string `bson:"space,omitempty"`
}

func (d *leaseDoc) holder() LeaseHolder {
	return LeaseHolder{Host: d.Host, PID: d.PID, Command: d.Command, Started: d.Started.UTC(), Heartbeat: d.Heartbeat.UTC(), Expires: d.Expires.UTC()}
}

func (d *leaseDoc) live(now time.Time) bool { return !d.Released && d.Expires.After(now) }

func leaseDocID(id string, gen int64) string { return fmt.Sprintf("%s%s/%d", leasePrefix, id, gen) }

// generations reads every lease document of job id; newest is the one
// with the highest generation (nil: none).
func (s *serverRecords) generations(ctx context.Context, id string) (all []leaseDoc, newest *leaseDoc, err error) {
	cur, err := s.coll.Find(ctx, bson.D{{Key: "lease", Value: id}})
	if err != nil {
		return nil, nil, fmt.Errorf("read the lease of job %q in %s: %w", id, s.Where(), err)
	}
	if err := cur.All(ctx, &all); err != nil {
		return nil, nil, fmt.Errorf("read the lease of job %q in %s: %w", id, s.Where(), err)
	}
	for i := range all {
		// Equal generations (a server whose unique _id index let two
		// racing inserts through) are ordered by token, so every run
		// agrees on the newest.
		if newest == nil || all[i].Gen > newest.Gen || (all[i].Gen == newest.Gen && all[i].Token < newest.Token) {
			newest = &all[i]
		}
	}
	return all, newest, nil
}

func (s *serverRecords) AcquireLease(ctx context.Context, id string, h LeaseHolder, ttl time.Duration) (Lease, error) {
	if ttl <= 0 {
		ttl = DefaultLeaseTTL
	}
	for attempt := 0; ; attempt++ {
		all, newest, err := s.generations(ctx, id)
		if err != nil {
			return nil, err
		}
		now := time.Now()
		if newest != nil && newest.live(now) && !abandonedHere(newest, h) && !holderGone(newest, h) {
			return nil, &LeaseHeldError{ID: id, Where: s.Where(), Holder: newest.holder(), Expiring: true}
		}
		gen := int64(1)
		if newest != nil {
			gen = newest.Gen + 1
		}
		h.Started, h.Heartbeat, h.Expires = now.UTC(), now.UTC(), now.Add(ttl).UTC()
		d := leaseDoc{ID: leaseDocID(id, gen), Lease: id, Gen: gen, Token: leaseToken(), Host: h.Host, PID: h.PID,
			Command: h.Command, Started: h.Started, Heartbeat: h.Heartbeat, Expires: h.Expires, Space: h.space}
		// The token is known here before the generation can be read:
		// another run of this process that reads it must not take it for
		// one given up here (abandonedHere) and take the lease over.
		heldHere.Store(d.Token, true)
		_, err = s.coll.InsertOne(ctx, d)
		if err != nil {
			heldHere.Delete(d.Token)
		}
		if mongo.IsDuplicateKeyError(err) && attempt < 3 {
			continue // another run took this generation: see who
		}
		if err != nil {
			return nil, fmt.Errorf("take the lease of job %q in %s: %w", id, s.Where(), err)
		}
		l := &serverLease{store: s, id: id, doc: d, ttl: ttl, validUntil: now.Add(ttl)}
		// A run that read an older generation before this one existed
		// may still insert that one's successor; the newest wins, and a
		// run that finds a newer generation than its own backs off.
		if _, newest, err = s.generations(ctx, id); err != nil {
			return nil, err
		}
		if newest != nil && (newest.Gen != gen || newest.Token != d.Token) {
			_, _ = s.coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: d.ID}, {Key: "token", Value: d.Token}})
			heldHere.Delete(d.Token)
			return nil, &LeaseHeldError{ID: id, Where: s.Where(), Holder: newest.holder(), Expiring: true}
		}
		// The older generations are over: their holders are gone or
		// find out at their next heartbeat.
		var old []any
		for _, o := range all {
			if o.Gen < gen {
				old = append(old, o.ID)
			}
		}
		if len(old) > 0 {
			_, _ = s.coll.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: old}}}})
		}
		return l, nil
	}
}

func (s *serverRecords) Leases(ctx context.Context) ([]LeaseState, error) {
	cur, err := s.coll.Find(ctx, bson.D{{Key: "lease", Value: bson.D{{Key: "$exists", Value: true}}}})
	if err != nil {
		return nil, fmt.Errorf("read leases in %s: %w", s.Where(), err)
	}
	var all []leaseDoc
	if err := cur.All(ctx, &all); err != nil {
		return nil, fmt.Errorf("read leases in %s: %w", s.Where(), err)
	}
	newest := map[string]*leaseDoc{}
	var ids []string
	for i := range all {
		d := &all[i]
		if n := newest[d.Lease]; n == nil {
			ids = append(ids, d.Lease)
			newest[d.Lease] = d
		} else if d.Gen > n.Gen {
			newest[d.Lease] = d
		}
	}
	now := time.Now()
	out := make([]LeaseState, 0, len(ids))
	for _, id := range ids {
		d := newest[id]
		out = append(out, LeaseState{ID: id, Holder: d.holder(), Live: d.live(now), Released: d.Released})
	}
	return out, nil
}

// serverLease is a generation this process inserted.
type serverLease struct {
	store      *serverRecords
	id         string
	doc        leaseDoc
	ttl        time.Duration
	validUntil time.Time
}

func (l *serverLease) ID() string            { return l.id }
func (l *serverLease) Holder() LeaseHolder   { return l.doc.holder() }
func (l *serverLease) ValidUntil() time.Time { return l.validUntil }

func (l *serverLease) lost(reason string, by *leaseDoc) error {
	e := &LeaseLostError{ID: l.id, Where: l.store.Where(), Reason: reason}
	if by != nil {
		h := by.holder()
		e.By = &h
	}
	return e
}

// Renew checks that this generation is still the newest and extends it.
// Past ValidUntil (no heartbeat got through for the TTL: the server was
// unreachable, or this process paused) another run may have taken the
// lease over, so the lease is taken again like a new one - by inserting
// the next generation, which fails when another run did - and is lost
// when that fails.
func (l *serverLease) Renew(ctx context.Context) error {
	sent := time.Now()
	all, newest, err := l.store.generations(ctx, l.id)
	if err != nil {
		return err
	}
	if newest == nil || newest.Gen != l.doc.Gen || newest.Token != l.doc.Token {
		return l.lost("another run took it over after it expired", newest)
	}
	if sent.After(l.validUntil) {
		return l.retake(ctx, sent, all)
	}
	res, err := l.store.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: l.doc.ID}, {Key: "token", Value: l.doc.Token}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "heartbeat", Value: sent.UTC()}, {Key: "expires", Value: sent.Add(l.ttl).UTC()}}}})
	if err != nil {
		return fmt.Errorf("renew the lease of job %q in %s: %w", l.id, l.store.Where(), err)
	}
	if res.MatchedCount == 0 {
		return l.lost("its lease document was removed", nil)
	}
	l.doc.Heartbeat, l.doc.Expires = sent.UTC(), sent.Add(l.ttl).UTC()
	l.validUntil = sent.Add(l.ttl)
	return nil
}

// retake inserts the generation after this expired one, keeping the
// holder's identity; a run that took the lease over meanwhile holds that
// generation already.
func (l *serverLease) retake(ctx context.Context, sent time.Time, all []leaseDoc) error {
	d := l.doc
	d.Gen++
	d.ID = leaseDocID(l.id, d.Gen)
	d.Token = leaseToken()
	d.Heartbeat, d.Expires = sent.UTC(), sent.Add(l.ttl).UTC()
	heldHere.Store(d.Token, true) // before it can be read (see AcquireLease)
	_, err := l.store.coll.InsertOne(ctx, d)
	if err != nil {
		heldHere.Delete(d.Token)
	}
	if mongo.IsDuplicateKeyError(err) {
		_, newest, _ := l.store.generations(ctx, l.id)
		return l.lost("it expired and another run took it over", newest)
	}
	if err != nil {
		return fmt.Errorf("renew the expired lease of job %q in %s: %w", l.id, l.store.Where(), err)
	}
	var old []any
	for _, o := range all {
		old = append(old, o.ID)
	}
	if len(old) > 0 {
		_, _ = l.store.coll.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: old}}}})
	}
	heldHere.Delete(l.doc.Token)
	heldHere.Store(d.Token, true)
	l.doc = d
	l.validUntil = sent.Add(l.ttl)
	return nil
}

// Release marks this generation released (it stays the newest, so the
// generations keep counting up); a lease lost meanwhile is left alone.
// Every unreleased generation this holder inserted is marked (same host,
// pid and start; retake keeps them): a retake whose insert reached the
// server but whose answer was lost left a newer generation that l does
// not know of, which would otherwise hold the job until it expires.
func (l *serverLease) Release(ctx context.Context) error {
	heldHere.Delete(l.doc.Token) // given up here, whatever the server answers
	_, err := l.store.coll.UpdateMany(ctx, bson.D{{Key: "lease", Value: l.id}, {Key: "host", Value: l.doc.Host},
		{Key: "pid", Value: l.doc.PID}, {Key: "started", Value: l.doc.Started}, {Key: "released", Value: false}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "released", Value: true}, {Key: "heartbeat", Value: time.Now().UTC()}}}})
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("release the lease of job %q in %s: %w", l.id, l.store.Where(), err)
	}
	return err
}

// heldHere holds the tokens of the lease generations this process holds
// (not released): an unexpired lease of this very process (same host and
// pid) whose token is not here was given up by an earlier run in this
// process that could not mark it released (the server was unreachable
// then), so a later run here takes it over at once instead of waiting for
// it to expire. Leases of other processes always run until they expire.
var heldHere sync.Map

// abandonedHere reports whether the live lease d was taken by this process
// (holder h's host and pid) and given up since.
func abandonedHere(d *leaseDoc, h LeaseHolder) bool {
	if d.Host != h.Host || d.PID != h.PID {
		return false
	}
	_, held := heldHere.Load(d.Token)
	return !held
}

// isLeaseDoc tells lease documents from checkpoints in _denorm.
func isLeaseDoc(id string) bool { return strings.HasPrefix(id, leasePrefix) }
