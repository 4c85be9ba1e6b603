package load

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/transform"
)

// testLeases: one holder per job. A second acquisition is refused naming
// the holder; a released lease is taken at once; leases are not
// checkpoints; of several runs racing for a lease exactly one gets it.
func testLeases(t *testing.T, k conformTarget) {
	uri, _ := k.fresh(t)
	ctx := context.Background()
	store := openTarget(t, uri, Options{}).Records()
	other := openTarget(t, uri, Options{}).Records() // another process's handle
	me := NewLeaseHolder("migrate")

	l, err := store.AcquireLease(ctx, "j", me, time.Minute)
	if err != nil {
		t.Fatalf("AcquireLease: %v", err)
	}
	if h := l.Holder(); h.PID != os.Getpid() || h.Host == "" || h.Command != "migrate" || h.Started.IsZero() {
		t.Errorf("holder %+v", h)
	}
	_, err = other.AcquireLease(ctx, "j", NewLeaseHolder("sync"), time.Minute)
	var held *LeaseHeldError
	if !errors.As(err, &held) || held.ID != "j" || held.Holder.PID != os.Getpid() || held.Holder.Command != "migrate" {
		t.Fatalf("second AcquireLease = %v, want a LeaseHeldError naming the holder", err)
	}
	for _, want := range []string{`job "j" is being run by another process`, "migrate on host", "pid"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if _, err := other.AcquireLease(ctx, "k", NewLeaseHolder("sync"), time.Minute); err != nil {
		t.Fatalf("another job's lease: %v", err)
	}
	before := l.Holder().Heartbeat
	time.Sleep(10 * time.Millisecond)
	if err := l.Renew(ctx); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	leases, err := other.Leases(ctx)
	if err != nil || len(leases) != 2 || leases[0].ID != "j" || !leases[0].Live || !leases[0].Holder.Heartbeat.After(before) {
		t.Fatalf("Leases = %+v, %v; want j live with the renewed heartbeat, and k", leases, err)
	}
	if list, bad, err := store.List(ctx); len(list) != 0 || len(bad) != 0 || err != nil {
		t.Fatalf("leases are not checkpoints: List = %v %v %v", list, bad, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	leases, err = other.Leases(ctx)
	if err != nil || len(leases) != 2 || leases[0].Live {
		t.Fatalf("after Release: Leases = %+v, %v", leases, err)
	}
	l2, err := other.AcquireLease(ctx, "j", NewLeaseHolder("sync"), time.Minute)
	if err != nil {
		t.Fatalf("a released lease is taken at once: %v", err)
	}
	defer l2.Release(ctx)

	// Racing runs: exactly one wins.
	const racers = 6
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		won  int
		errs []error
		// winners are held until every racer is done: a lease dropped
		// unreleased is closed by the garbage collector (a directory
		// lock's file), and a later racer could then take it
		winners []Lease
	)
	for i := 0; i < racers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := openTarget(t, uri, Options{}).Records()
			l, err := s.AcquireLease(ctx, "race", NewLeaseHolder("migrate"), time.Minute)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				won++
				winners = append(winners, l)
				return
			}
			if !errors.As(err, &held) {
				errs = append(errs, err)
			}
			_ = l
		}()
	}
	wg.Wait()
	defer func() {
		for _, l := range winners {
			_ = l.Release(ctx)
		}
	}()
	if won != 1 || len(errs) > 0 {
		t.Fatalf("%d of %d racers took the lease (want 1); other errors: %v", won, racers, errs)
	}
}

// testLeaseExpiry: a server lease not renewed within its TTL is taken
// over (a crashed holder), and the old holder finds out at its next
// heartbeat; a directory lock cannot expire.
func testLeaseExpiry(t *testing.T, k conformTarget) {
	uri, _ := k.fresh(t)
	ctx := context.Background()
	store := openTarget(t, uri, Options{}).Records()
	other := openTarget(t, uri, Options{}).Records()
	const ttl = 300 * time.Millisecond
	old, err := store.AcquireLease(ctx, "j", NewLeaseHolder("migrate"), ttl)
	if err != nil {
		t.Fatal(err)
	}
	if !k.server {
		if !old.ValidUntil().IsZero() {
			t.Errorf("a directory lock expires at %v", old.ValidUntil())
		}
		time.Sleep(2 * ttl)
		var held *LeaseHeldError
		if _, err := other.AcquireLease(ctx, "j", NewLeaseHolder("migrate"), ttl); !errors.As(err, &held) {
			t.Fatalf("a held directory lock was taken: %v", err)
		}
		return
	}
	if until := old.ValidUntil(); until.IsZero() || time.Until(until) > ttl {
		t.Errorf("ValidUntil %v, want within %v", until, ttl)
	}
	var held *LeaseHeldError
	if _, err := other.AcquireLease(ctx, "j", NewLeaseHolder("migrate"), ttl); !errors.As(err, &held) || !held.Expiring {
		t.Fatalf("a live lease was taken: %v", err)
	}
	time.Sleep(ttl + 100*time.Millisecond)
	leases, err := other.Leases(ctx)
	if err != nil || len(leases) != 1 || leases[0].Live || leases[0].Released {
		t.Fatalf("an expired lease: %+v, %v", leases, err)
	}
	taker, err := other.AcquireLease(ctx, "j", NewLeaseHolder("sync"), time.Minute)
	if err != nil {
		t.Fatalf("taking over an expired lease: %v", err)
	}
	var lost *LeaseLostError
	err = old.Renew(ctx)
	if !errors.As(err, &lost) || lost.ID != "j" {
		t.Fatalf("the old holder's Renew = %v, want a LeaseLostError", err)
	}
	if err := taker.Renew(ctx); err != nil {
		t.Fatalf("the new holder's Renew: %v", err)
	}
	_ = old.Release(ctx) // must not release the taker's lease
	if leases, err := other.Leases(ctx); err != nil || len(leases) != 1 || !leases[0].Live || leases[0].Holder.Command != "sync" {
		t.Fatalf("after the old holder's Release: %+v, %v", leases, err)
	}
	// A holder whose heartbeats did not get through for the TTL takes
	// the lease again when nobody took it over meanwhile.
	l, err := store.AcquireLease(ctx, "late", NewLeaseHolder("migrate"), ttl)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(ttl + 50*time.Millisecond)
	if err := l.Renew(ctx); err != nil {
		t.Fatalf("Renew after the TTL, nobody took it: %v", err)
	}
	if time.Until(l.ValidUntil()) <= 0 {
		t.Errorf("ValidUntil %v after the renewal", l.ValidUntil())
	}
	if _, err := other.AcquireLease(ctx, "late", NewLeaseHolder("migrate"), ttl); !errors.As(err, &held) {
		t.Fatalf("the lease taken again is live: %v", err)
	}
}

// TestDirCollectionNames: a directory target refuses collection names
// that are not plain file names inside it.
func TestDirCollectionNames(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	tg := openTarget(t, dir, Options{})
	doc := transform.Document{ID: int32(1), Body: transform.Doc{{Key: "_id", Value: int32(1)}}}
	for _, name := range []string{"../escaped", "a/b", `a\b`, "..", ".hidden", "_denorm", "system.x", "$x", ""} {
		_, err := tg.Write(context.Background(), name, []transform.Document{doc})
		if err == nil || !strings.Contains(err.Error(), "cannot hold collection") {
			t.Errorf("Write to %q = %v, want refused", name, err)
		}
		if _, err := tg.Scan(context.Background(), name, func([]byte) error { return nil }); err == nil {
			t.Errorf("Scan of %q is not refused", name)
		}
		if _, err := tg.Delete(context.Background(), name, Selection{}); err == nil {
			t.Errorf("Delete of %q is not refused", name)
		}
	}
	if ents, _ := os.ReadDir(parent); len(ents) > 1 {
		t.Errorf("files written beside the target: %v", ents)
	}
	if _, err := tg.Write(context.Background(), "fine.name", []transform.Document{doc}); err != nil {
		t.Errorf("a dotted name: %v", err)
	}
}

// TestDirWriterLock: two handles (processes) cannot write one
// collection's file at once; the second is refused naming the file, and
// can write once the first closed it.
func TestDirWriterLock(t *testing.T) {
	dir := t.TempDir()
	a := openTarget(t, dir, Options{})
	b := openTarget(t, dir, Options{})
	prepare(t, a, nil, "people")
	err := b.Prepare(context.Background(), Collections("people"), nil)
	if err == nil || !strings.Contains(err.Error(), "people.jsonl is being written by another process") {
		t.Fatalf("second writer: %v", err)
	}
	write(t, a, "people", docs(1, 3, "a")...)
	closeTarget(t, a)
	wantContents(t, b, "people", lines(1, 3, "a")...)
	prepare(t, b, nil, "people")
	write(t, b, "people", docs(1, 2, "b")...)
	wantContents(t, b, "people", lines(1, 2, "b")...)
}

// TestLeaseOfGoneHolder: a server lease held by a process of this machine
// that no longer runs is taken over at once, not after its time to live
// (a follower killed and restarted); one held by a process that runs, or
// by one whose PID space is unknown (an older lease, another container),
// is not.
func TestLeaseOfGoneHolder(t *testing.T) {
	if procSpace() == "" {
		t.Skip("no /proc here: a gone holder cannot be told")
	}
	uri, _ := testenv.MongoDB(t)
	ctx := context.Background()
	store := openTarget(t, uri, Options{}).Records()
	// A process that ran and ended: its pid is free.
	ended := exec.Command("true")
	if err := ended.Run(); err != nil {
		t.Fatal(err)
	}
	// A process that runs.
	running := exec.Command("sleep", "60")
	if err := running.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = running.Process.Kill(); _ = running.Wait() })

	holder := func(pid int) LeaseHolder {
		h := NewLeaseHolder("sync")
		h.PID = pid
		return h
	}
	for _, c := range []struct {
		name     string
		holder   LeaseHolder
		takeOver bool
	}{
		{"gone", holder(ended.Process.Pid), true},
		{"running", holder(running.Process.Pid), false},
		{"unknown pid space", func() LeaseHolder { h := holder(ended.Process.Pid); h.space = ""; return h }(), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := "gone-" + strings.ReplaceAll(c.name, " ", "-")
			if _, err := store.AcquireLease(ctx, id, c.holder, time.Hour); err != nil {
				t.Fatal(err)
			}
			l, err := store.AcquireLease(ctx, id, NewLeaseHolder("sync"), time.Hour)
			var held *LeaseHeldError
			switch {
			case c.takeOver && err != nil:
				t.Fatalf("the lease of a gone holder was not taken over: %v", err)
			case c.takeOver && l.Holder().PID != os.Getpid():
				t.Fatalf("taken over by %+v", l.Holder())
			case !c.takeOver && !errors.As(err, &held):
				t.Fatalf("AcquireLease = %v, want a LeaseHeldError", err)
			}
		})
	}
}
