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

// The join asks for the facts of every GPU process on every sample tick, but most of
// them cannot change while the process lives: its command line, cgroup (container and
// pod) and start time. Cache reads those once per (PID, start time) and afterwards only
// /proc/PID/stat, one small file, for what does change (RSS) and to notice that a PID
// now names another process: one open, read and close per process per tick instead of
// three files through procfs (BenchmarkFactsCached: about an eighth of the time).

// DefaultForget is how long Cache remembers a process it is no longer asked about.
const DefaultForget = time.Minute

// Cache is a Reader that remembers what does not change while a process lives. It is
// safe for concurrent use.
type Cache struct {
	r      *Reader
	clock  clock.Clock
	forget time.Duration

	mu        sync.Mutex
	procs     map[uint32]*cachedFacts
	lastSweep time.Time
	buf       [1024]byte // one stat line; the kernel's is well under 1 KiB
	fullReads uint64     // tests and benchmarks: processes read in full
}

type cachedFacts struct {
	f    Facts
	seen time.Time
}

// NewCache returns a Cache over r; clk (nil: the wall clock) times forgetting.
func NewCache(r *Reader, clk clock.Clock) *Cache {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Cache{r: r, clock: clk, forget: DefaultForget, procs: map[uint32]*cachedFacts{}, lastSweep: clk.Now()}
}

// Facts returns the facts of one process as Reader.Facts does, reading only
// /proc/PID/stat when the process (PID and start time) is already known.
func (c *Cache) Facts(pid uint32) (Facts, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	c.sweep(now)
	line, err := c.readStat(pid)
	if err != nil {
		delete(c.procs, pid)
		return Facts{}, c.r.readErr(pid, "stat", err)
	}
	comm, start, rss, err := parseStat(line)
	if err != nil {
		return Facts{}, fmt.Errorf("read stat of process %d under %q: %w", pid, c.r.root, err)
	}
	if e := c.procs[pid]; e != nil && e.f.StartTicks == start {
		e.seen = now
		e.f.RSSBytes = c.rssBytes(rss)
		if string(comm) != e.f.Comm { // prctl(PR_SET_NAME) renames a thread; free to follow
			e.f.Comm = string(comm)
		}
		return e.f, nil
	}
	f, err := c.r.Facts(pid)
	if err != nil {
		delete(c.procs, pid)
		return Facts{}, err
	}
	c.fullReads++
	c.procs[pid] = &cachedFacts{f: f, seen: now}
	return f, nil
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
			delete(c.procs, pid)
		}
	}
}

// Len is how many processes the cache remembers.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.procs)
}

func (c *Cache) readStat(pid uint32) ([]byte, error) {
	n, err := readSmall(c.r.root+"/"+strconv.FormatUint(uint64(pid), 10)+"/stat", c.buf[:])
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
