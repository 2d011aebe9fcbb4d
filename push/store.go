package push

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/vram-exporter/vram_exporter/clock"
)

// Default store bounds, used by the daemon unless configured otherwise.
const (
	DefaultTTL          = 30 * time.Second
	DefaultMaxProcesses = 1024
)

// Cred is what the kernel says about the sender of one message (SCM_CREDENTIALS),
// translated into the daemon's PID namespace.
type Cred struct {
	PID, UID, GID uint32
}

// Sender is the latest accepted message of one connection, with who sent it.
type Sender struct {
	ConnID      uint64
	PID         uint32
	UID, GID    uint32
	ConnectedAt time.Time
	LastSeen    time.Time // when the latest accepted message arrived
	Messages    uint64    // accepted messages on this connection
	Msg         Message   // shared and immutable: do not modify
}

// StoreStats are the store's own counters for the collector.
type StoreStats struct {
	Senders   int    // connections holding data now, expired or not
	Processes int    // distinct PIDs holding data now
	Expired   uint64 // times a sender went silent for longer than the TTL
}

// Store keeps the latest message of every connection. It is bounded by the number of
// connections (the server's limit) and by maxProcesses distinct PIDs, and it never lets
// one connection's input touch another's data: the only writes are Update and Remove of
// the caller's own connection ID.
type Store struct {
	ttl          time.Duration
	maxProcesses int
	clock        clock.Clock

	mu      sync.Mutex
	senders map[uint64]*entry
	pids    map[uint32]int // PID → connections holding data
	expired uint64

	changed chan struct{}
}

type entry struct {
	Sender
	expiredCounted bool // counted in expired since its last message
}

// NewStore returns an empty store. ttl ≤ 0 means DefaultTTL, maxProcesses ≤ 0 means
// DefaultMaxProcesses, and a nil clock the wall clock.
func NewStore(ttl time.Duration, maxProcesses int, clk clock.Clock) *Store {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if maxProcesses <= 0 {
		maxProcesses = DefaultMaxProcesses
	}
	if clk == nil {
		clk = clock.Real{}
	}
	return &Store{
		ttl: ttl, maxProcesses: maxProcesses, clock: clk,
		senders: make(map[uint64]*entry),
		pids:    make(map[uint32]int),
		changed: make(chan struct{}, 1),
	}
}

// Update replaces connection connID's data with msg (a full snapshot, not a delta). A
// message from a PID the store does not yet track is refused with too_many_processes
// once maxProcesses PIDs are tracked; the connection's previous data then stays.
func (s *Store) Update(connID uint64, connectedAt time.Time, cred Cred, msg Message) error {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.senders[connID]
	samePID := e != nil && e.PID == cred.PID
	if !samePID && s.pids[cred.PID] == 0 && len(s.pids) >= s.maxProcesses {
		return reject(ReasonTooManyProcesses, "already tracking %d processes; PID %d is not tracked", s.maxProcesses, cred.PID)
	}
	if e == nil {
		e = &entry{Sender: Sender{ConnID: connID, ConnectedAt: connectedAt}}
		s.senders[connID] = e
	} else if !samePID {
		// A forked child kept its parent's socket: the data now belongs to the child.
		s.dropPID(e.PID)
	}
	if !samePID {
		s.pids[cred.PID]++
	}
	e.PID, e.UID, e.GID = cred.PID, cred.UID, cred.GID
	e.LastSeen = now
	e.Messages++
	e.Msg = msg
	e.expiredCounted = false
	return nil
}

func (s *Store) dropPID(pid uint32) {
	if s.pids[pid] <= 1 {
		delete(s.pids, pid)
	} else {
		s.pids[pid]--
	}
}

// Remove forgets connection connID at once: its process is gone (or at least its
// reporter is), so its series must disappear with it.
func (s *Store) Remove(connID uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.senders[connID]; ok {
		s.dropPID(e.PID)
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
		if now.Sub(e.LastSeen) > s.ttl {
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
	return StoreStats{Senders: len(s.senders), Processes: len(s.pids), Expired: s.expired}
}
