package procinfo

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/vram-exporter/vram_exporter/clock"
)

// The join asks for the facts of every GPU process and every pusher on every sample
// tick, but most of them cannot change while the process lives: its command line, cgroup
// (container and pod) and start time. Cache reads those once per (PID, start time). What
// does change (RSS, and comm after prctl(PR_SET_NAME)) is refreshed from /proc/PID/stat
// at most every StatRefresh, not every tick: that one read per process per tick was the
// largest share of the daemon's idle CPU with 16 pushing processes.
//
// A PID that names another process must still be noticed at once, since the join drops
// a push connection whose PID was reused and keys trend histories on the start time.
// Where pidfds work (Linux 5.3+, procfs of the daemon's own PID namespace, which is the
// hostPID deployment) the Cache holds one per process and polls it on every call: a
// process that exited is dropped and its PID read afresh, so reuse is seen on the next
// tick at the cost of one poll(2). Elsewhere (an older kernel, a host /proc mounted into
// a container without hostPID) the start time is compared only at each stat refresh, so
// a reuse is seen up to StatRefresh late; the join's check of a new connection still
// asks for a fresh read (Refresh), so a new pusher is never taken for a reused PID.

// DefaultForget is how long Cache remembers a process it is no longer asked about.
const DefaultForget = time.Minute

// StatRefresh is how often a known process's /proc/PID/stat is read again: its RSS (and
// comm) are at most this old, and without pidfds so is the start time compared to
// notice a reused PID.
const StatRefresh = 10 * time.Second

// maxPidfds bounds the descriptors the Cache holds; processes beyond it fall back to the
// stat cadence rather than risk the daemon's descriptor limit.
const maxPidfds = 4096

// Cache is a Reader that remembers what does not change while a process lives. It is
// safe for concurrent use.
type Cache struct {
	r      *Reader
	clock  clock.Clock
	forget time.Duration
	pidfds bool // pidfds name the processes under r's root (pidfdsUsable)
	// read reads a small procfs file (readSmall; tests count calls).
	read func(path string, buf []byte) (int, error)

	mu        sync.Mutex
	procs     map[uint32]*cachedFacts
	openFDs   int
	lastSweep time.Time
	buf       [1024]byte // one stat line; the kernel's is well under 1 KiB
	fullReads uint64     // tests and benchmarks: processes read in full
}

type cachedFacts struct {
	f      Facts
	seen   time.Time // last asked about
	statAt time.Time // last /proc/PID/stat read
	pidfd  int       // -1: none; the stat cadence alone detects reuse
}

// NewCache returns a Cache over r; clk (nil: the wall clock) times forgetting and the
// stat cadence.
func NewCache(r *Reader, clk clock.Clock) *Cache {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Cache{r: r, clock: clk, forget: DefaultForget, pidfds: pidfdsUsable(r.root), read: readSmall,
		procs: map[uint32]*cachedFacts{}, lastSweep: clk.Now()}
}

// Facts returns the facts of one process as Reader.Facts does, from memory when the
// process is known, with RSS and comm up to StatRefresh old.
func (c *Cache) Facts(pid uint32) (Facts, error) {
	return c.facts(pid, false)
}

// Refresh is Facts with a /proc/PID/stat read now, whatever the cadence: for a caller
// about to act on a start time that disagrees with the cached one.
func (c *Cache) Refresh(pid uint32) (Facts, error) {
	return c.facts(pid, true)
}

func (c *Cache) facts(pid uint32, fresh bool) (Facts, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	c.sweep(now)
	e := c.procs[pid]
	if e != nil && e.pidfd >= 0 && pidfdExited(e.pidfd) {
		c.drop(pid, e) // the PID may name another process by now: read it afresh
		e = nil
	}
	if e != nil {
		e.seen = now
		if !fresh && now.Sub(e.statAt) < StatRefresh {
			return e.f, nil
		}
		line, err := c.readStat(pid)
		if err != nil {
			c.drop(pid, e)
			return Facts{}, c.r.readErr(pid, "stat", err)
		}
		comm, start, rss, err := parseStat(line)
		if err != nil {
			return Facts{}, fmt.Errorf("read stat of process %d under %q: %w", pid, c.r.root, err)
		}
		if start == e.f.StartTicks {
			e.statAt = now
			e.f.RSSBytes = c.rssBytes(rss)
			if string(comm) != e.f.Comm { // prctl(PR_SET_NAME) renames a thread; free to follow
				e.f.Comm = string(comm)
			}
			return e.f, nil
		}
		c.drop(pid, e) // another process now has the PID
	}
	return c.readFull(pid, now)
}

// readFull reads a process not known (or no longer the one known) and remembers it. The
// pidfd is opened before the read: if it has not exited after the read, the facts read
// are that process's, never a successor's.
func (c *Cache) readFull(pid uint32, now time.Time) (Facts, error) {
	fd := -1
	if c.pidfds && c.openFDs < maxPidfds {
		if fd, _ = pidfdOpen(pid); fd >= 0 {
			c.openFDs++
		}
	}
	f, err := c.r.Facts(pid)
	if err != nil {
		c.closeFD(fd)
		return Facts{}, err
	}
	c.fullReads++
	if fd >= 0 && pidfdExited(fd) {
		// Exited (a zombie not yet reaped): its facts are not worth a pidfd to watch.
		c.closeFD(fd)
		return f, nil
	}
	c.procs[pid] = &cachedFacts{f: f, seen: now, statAt: now, pidfd: fd}
	return f, nil
}

func (c *Cache) drop(pid uint32, e *cachedFacts) {
	c.closeFD(e.pidfd)
	delete(c.procs, pid)
}

func (c *Cache) closeFD(fd int) {
	if fd >= 0 {
		pidfdClose(fd)
		c.openFDs--
	}
}

func (c *Cache) rssBytes(pages int64) uint64 {
	if pages <= 0 {
		return 0
	}
	return uint64(pages) * c.r.pageSize
}

// sweep forgets processes not asked about for c.forget, at most once per c.forget.
func (c *Cache) sweep(now time.Time) {
	if now.Sub(c.lastSweep) < c.forget {
		return
	}
	c.lastSweep = now
	for pid, e := range c.procs {
		if now.Sub(e.seen) >= c.forget {
			c.drop(pid, e)
		}
	}
}

// Len is how many processes the cache remembers.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.procs)
}

// Close forgets every process and closes the pidfds held for them.
func (c *Cache) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for pid, e := range c.procs {
		c.drop(pid, e)
	}
	return nil
}

func (c *Cache) readStat(pid uint32) ([]byte, error) {
	n, err := c.read(c.r.root+"/"+strconv.FormatUint(uint64(pid), 10)+"/stat", c.buf[:])
	if err != nil {
		return nil, err
	}
	return c.buf[:n], nil
}

// parseStat takes comm, starttime (field 22) and rss (field 24, pages) from a
// /proc/PID/stat line. comm is in parentheses and may itself hold spaces and
// parentheses, so the fields are counted from its last ')'.
func parseStat(line []byte) (comm []byte, start uint64, rss int64, err error) {
	open, end := bytes.IndexByte(line, '('), bytes.LastIndexByte(line, ')')
	if open < 0 || end < open {
		return nil, 0, 0, errors.New("malformed stat line: no (comm)")
	}
	comm = line[open+1 : end]
	rest := line[end+1:]
	// After ')' come fields 3 (state) onwards, one space before each.
	field := 2
	var startField, rssField []byte
	for len(rest) > 0 && rssField == nil {
		rest = bytes.TrimLeft(rest, " ")
		i := bytes.IndexAny(rest, " \n")
		if i < 0 {
			i = len(rest)
		}
		field++
		switch field {
		case 22:
			startField = rest[:i]
		case 24:
			rssField = rest[:i]
		}
		rest = rest[i:]
	}
	if rssField == nil {
		return nil, 0, 0, errors.New("malformed stat line: fewer than 24 fields")
	}
	if start, err = strconv.ParseUint(string(startField), 10, 64); err != nil {
		return nil, 0, 0, fmt.Errorf("malformed stat line: starttime: %w", err)
	}
	if rss, err = strconv.ParseInt(string(rssField), 10, 64); err != nil {
		return nil, 0, 0, fmt.Errorf("malformed stat line: rss: %w", err)
	}
	return comm, start, rss, nil
}
