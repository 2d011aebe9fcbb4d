package push

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/vram-exporter/vram_exporter/clock"
)

// Default store bounds, used by the daemon unless configured otherwise. Each pushed
// pool becomes about ten exported series and costs some 15 KiB of the daemon's memory
// from message to scrape, so DefaultMaxSeries pools (about 60 MiB at the worst) keep the
// daemon far inside its 256 MiB whatever senders do; a real node (8 GPUs, a few dozen
// workers, a handful of pools each) needs a fraction of it.
const (
	DefaultTTL                  = 30 * time.Second
	DefaultMaxProcesses         = 1024
	DefaultMaxDevicesPerProcess = MaxDevices
	DefaultMaxPoolsPerProcess   = 128
	DefaultMaxSeries            = 4096
)

// StoreOptions bound what the Store keeps. A pool is one (device, pool name) of a
// process, counted once however many of the process's connections report it (the join
// merges them into one set of series); a device that lists no pools counts as one pool.
type StoreOptions struct {
	TTL                  time.Duration
	MaxProcesses         int // distinct PIDs holding data
	MaxDevicesPerProcess int // distinct GPU UUIDs over all of a PID's connections
	MaxPoolsPerProcess   int // distinct (UUID, pool) over all of a PID's connections
	MaxSeries            int // distinct (PID, UUID, pool) over all senders
	Clock                clock.Clock
}

// DefaultStoreOptions returns the defaults of every store option (Clock nil: the wall
// clock). package config reads its defaults from here.
func DefaultStoreOptions() StoreOptions {
	return StoreOptions{
		TTL:                  DefaultTTL,
		MaxProcesses:         DefaultMaxProcesses,
		MaxDevicesPerProcess: DefaultMaxDevicesPerProcess,
		MaxPoolsPerProcess:   DefaultMaxPoolsPerProcess,
		MaxSeries:            DefaultMaxSeries,
	}
}

// Check reports every option the store cannot run with, one call per problem, in the
// form of ServerOptions.Check. The TTL's rule depends on the poll interval, which the
// store does not know: package config checks it.
func (o StoreOptions) Check(report func(field, problem string)) {
	atLeastOne := func(field string, n, def int) {
		if n < 1 {
			report(field, fmt.Sprintf("%d is out of range; use at least 1, like %d", n, def))
		}
	}
	atLeastOne("MaxProcesses", o.MaxProcesses, DefaultMaxProcesses)
	atLeastOne("MaxDevicesPerProcess", o.MaxDevicesPerProcess, DefaultMaxDevicesPerProcess)
	atLeastOne("MaxPoolsPerProcess", o.MaxPoolsPerProcess, DefaultMaxPoolsPerProcess)
	atLeastOne("MaxSeries", o.MaxSeries, DefaultMaxSeries)
}

// Validate reports every problem Check finds, each prefixed with its field, or nil.
func (o StoreOptions) Validate() error {
	var errs []error
	o.Check(func(field, problem string) {
		errs = append(errs, fmt.Errorf("push: %s: %s", field, problem))
	})
	return errors.Join(errs...)
}

// Cred is what the kernel says about the sender of one message (SCM_CREDENTIALS),
// translated into the daemon's PID namespace, and when that process started.
type Cred struct {
	PID, UID, GID uint32
	// StartTicks is the process's start time (field 22 of /proc/PID/stat), read when the
	// connection's PID was first seen; 0 when unknown. The join drops the data when the
	// PID's start time has changed since: the PID then names an unrelated process.
	StartTicks uint64
}

// Sender is the latest accepted message of one connection, with who sent it.
type Sender struct {
	ConnID      uint64
	PID         uint32
	UID, GID    uint32
	StartTicks  uint64 // see Cred.StartTicks
	ConnectedAt time.Time
	LastSeen    time.Time // when the latest accepted message arrived
	Messages    uint64    // accepted messages on this connection
	Msg         Message   // shared and immutable: do not modify
}

// StoreStats are the store's own counters for the collector.
type StoreStats struct {
	Senders   int    // connections holding data now, expired or not
	Processes int    // distinct PIDs holding data now
	Series    int    // distinct (PID, UUID, pool) held now, see StoreOptions
	Expired   uint64 // times a sender went silent for longer than the TTL
}

// Store keeps the latest message of every connection. It is bounded by the number of
// connections (the server's limit) and by its StoreOptions, and it never lets one
// connection's input touch another's data: the only writes are Update and Remove of
// the caller's own connection ID.
type Store struct {
	opts  StoreOptions
	clock clock.Clock

	mu      sync.Mutex
	senders map[uint64]*entry
	procs   map[uint32]*procUse // PID → what its connections hold
	series  int                 // Σ len(procUse.pools)
	expired uint64

	changed chan struct{}
}

type entry struct {
	Sender
	expiredCounted bool // counted in expired since its last message
}

// poolKey is one pool of one device; a device without pools is {uuid, ""} (a pool name
// is never empty), so it still counts.
type poolKey struct{ uuid, pool string }

// procUse is what one PID's connections hold together, each key with the number of
// its connections whose latest message names it.
type procUse struct {
	conns   int
	devices map[string]int
	pools   map[poolKey]int
}

func (u *procUse) apply(m Message, delta int) {
	for _, d := range m.Devices {
		bump(u.devices, d.UUID, delta)
		if len(d.Pools) == 0 {
			bump(u.pools, poolKey{d.UUID, ""}, delta)
		}
		for _, p := range d.Pools {
			bump(u.pools, poolKey{d.UUID, p.Name}, delta)
		}
	}
}

func bump[K comparable](m map[K]int, k K, delta int) {
	if n := m[k] + delta; n > 0 {
		m[k] = n
	} else {
		delete(m, k)
	}
}

// NewStore returns an empty store with the default bounds but the TTL and process
// bound given. ttl ≤ 0 means DefaultTTL, maxProcesses ≤ 0 means DefaultMaxProcesses,
// and a nil clock the wall clock.
func NewStore(ttl time.Duration, maxProcesses int, clk clock.Clock) *Store {
	o := DefaultStoreOptions()
	if ttl > 0 {
		o.TTL = ttl
	}
	if maxProcesses > 0 {
		o.MaxProcesses = maxProcesses
	}
	o.Clock = clk
	s, err := NewStoreWithOptions(o)
	if err != nil {
		panic(err) // unreachable: every bound is a default or positive
	}
	return s
}

// NewStoreWithOptions returns an empty store bounded by o, or every problem Check
// finds. A TTL ≤ 0 means DefaultTTL and a nil clock the wall clock.
func NewStoreWithOptions(o StoreOptions) (*Store, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	return &Store{
		opts: o, clock: o.Clock,
		senders: make(map[uint64]*entry),
		procs:   make(map[uint32]*procUse),
		changed: make(chan struct{}, 1),
	}, nil
}

// Update replaces connection connID's data with msg (a full snapshot, not a delta). It
// is refused, and the connection's previous data kept, when it would make the store
// exceed a bound: a PID not yet tracked once MaxProcesses are (too_many_processes), a
// process over MaxDevicesPerProcess or MaxPoolsPerProcess over all its connections
// (too_many_process_devices, too_many_process_pools), or all senders together over
// MaxSeries (too_many_series). Only a message that grows past a bound is refused, so a
// sender already inside keeps being updated.
func (s *Store) Update(connID uint64, connectedAt time.Time, cred Cred, msg Message) error {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.senders[connID]
	samePID := e != nil && e.PID == cred.PID
	var prev *procUse // the process this connection spoke for, if another
	if e != nil && !samePID {
		prev = s.procs[e.PID]
	}
	use := s.procs[cred.PID]
	if use == nil {
		// A forked child that takes over the last connection of its parent frees the
		// parent's slot as it takes one: it must not be refused at the bound.
		frees := prev != nil && prev.conns == 1
		if len(s.procs) >= s.opts.MaxProcesses && !frees {
			return reject(ReasonTooManyProcesses, "already tracking %d processes (push.max_processes); PID %d is not tracked", s.opts.MaxProcesses, cred.PID)
		}
		use = &procUse{devices: map[string]int{}, pools: map[poolKey]int{}}
	}
	devs0, pools0 := len(use.devices), len(use.pools)
	series0 := s.series
	// Apply, check, and undo on refusal: cheaper and simpler than predicting the union.
	undo := s.move(e, prev, use, cred.PID, msg, samePID)
	devs, pools := len(use.devices), len(use.pools)
	var err error
	switch {
	case devs > devs0 && devs > s.opts.MaxDevicesPerProcess:
		err = reject(ReasonTooManyProcessDevices, "PID %d would report %d devices over its connections; at most %d (push.max_devices_per_process)", cred.PID, devs, s.opts.MaxDevicesPerProcess)
	case pools > pools0 && pools > s.opts.MaxPoolsPerProcess:
		err = reject(ReasonTooManyProcessPools, "PID %d would report %d pools over its connections; at most %d (push.max_pools_per_process)", cred.PID, pools, s.opts.MaxPoolsPerProcess)
	case s.series > series0 && s.series > s.opts.MaxSeries:
		err = reject(ReasonTooManySeries, "all senders together would report %d pools; at most %d (push.max_series)", s.series, s.opts.MaxSeries)
	}
	if err != nil {
		undo()
		return err
	}
	s.procs[cred.PID] = use
	if e == nil {
		e = &entry{Sender: Sender{ConnID: connID, ConnectedAt: connectedAt}}
		s.senders[connID] = e
	} else if !samePID {
		// A forked child kept its parent's socket: the data now belongs to the child.
		s.release(e.PID, prev)
	}
	e.PID, e.UID, e.GID, e.StartTicks = cred.PID, cred.UID, cred.GID, cred.StartTicks
	e.LastSeen = now
	e.Messages++
	e.Msg = msg
	e.expiredCounted = false
	return nil
}

// move takes connection e's previous message out of the counts (from prev when the PID
// changed) and puts msg into use's, keeping s.series in step; the returned func puts
// everything back.
func (s *Store) move(e *entry, prev, use *procUse, pid uint32, msg Message, samePID bool) (undo func()) {
	from := use
	if !samePID {
		from = prev
	}
	had := e != nil && from != nil
	if had {
		s.apply(from, e.Msg, -1)
	}
	s.apply(use, msg, +1)
	if !samePID {
		use.conns++
	}
	return func() {
		if !samePID {
			use.conns--
		}
		s.apply(use, msg, -1)
		if had {
			s.apply(from, e.Msg, +1)
		}
	}
}

func (s *Store) apply(u *procUse, m Message, delta int) {
	before := len(u.pools)
	u.apply(m, delta)
	s.series += len(u.pools) - before
}

// release drops one connection of pid (its message already out of use's counts), and
// the PID once it has none.
func (s *Store) release(pid uint32, use *procUse) {
	if use == nil {
		return
	}
	use.conns--
	if use.conns <= 0 {
		s.series -= len(use.pools) // empty by now; kept exact all the same
		delete(s.procs, pid)
	}
}

// Remove forgets connection connID at once: its process is gone (or at least its
// reporter is), so its series must disappear with it.
func (s *Store) Remove(connID uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.senders[connID]; ok {
		if use := s.procs[e.PID]; use != nil {
			s.apply(use, e.Msg, -1)
			s.release(e.PID, use)
		}
		delete(s.senders, connID)
		select { // wake the join so the process vanishes from the next scrape
		case s.changed <- struct{}{}:
		default:
		}
	}
}

// Changed is signalled (coalesced) when a connection's data is removed, so the join can
// publish a view without it at once instead of at the next sample tick.
func (s *Store) Changed() <-chan struct{} { return s.changed }

// Snapshot returns the senders seen within the TTL, sorted by PID then connection ID.
// The slice is the caller's; the Messages in it are shared and must not be modified.
func (s *Store) Snapshot() []Sender {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	// Sort pointers, then copy: swapping whole Senders costs several times more.
	live := make([]*entry, 0, len(s.senders))
	for _, e := range s.senders {
		if now.Sub(e.LastSeen) > s.opts.TTL {
			if !e.expiredCounted {
				e.expiredCounted = true
				s.expired++
			}
			continue
		}
		live = append(live, e)
	}
	slices.SortFunc(live, func(a, b *entry) int {
		if c := cmp.Compare(a.PID, b.PID); c != 0 {
			return c
		}
		return cmp.Compare(a.ConnID, b.ConnID)
	})
	out := make([]Sender, len(live))
	for i, e := range live {
		out[i] = e.Sender
	}
	return out
}

// Stats returns the store's counters. Expiry is noticed by Snapshot, so Expired lags
// until the next Snapshot (the collector takes one on every scrape).
func (s *Store) Stats() StoreStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return StoreStats{Senders: len(s.senders), Processes: len(s.procs), Series: s.series, Expired: s.expired}
}
