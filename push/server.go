package push

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/vram-exporter/vram_exporter/clock"
	"github.com/vram-exporter/vram_exporter/internal/durfmt"
)

// Defaults of ServerOptions; docs/protocol.md documents the same values.
const (
	DefaultSocketPath            = "/run/vram_exporter/push.sock"
	DefaultSocketMode            = os.FileMode(0o660)
	DefaultMaxConnections        = 4096
	DefaultMaxMessageBytes       = 65536
	DefaultRatePerSecond         = 100
	DefaultBurst                 = 200
	DefaultMaxConsecutiveRejects = 20
	// A node runs many workers under one uid (one per GPU, or dozens of CPU-side
	// workers), so a uid may hold a quarter of the connections: enough for the
	// 1,000-client load test, and four non-root users are needed to fill the table.
	DefaultMaxConnectionsPerUID = 1024
	// Connects per second and burst per uid: a uid may open its whole share at once
	// (every worker reconnecting after a daemon restart), then 100 a second. A loop of
	// connect and close is refused at accept, before it costs a goroutine.
	DefaultConnectRatePerUID  = 100
	DefaultConnectBurstPerUID = DefaultMaxConnectionsPerUID
	// Clients send their first message right after connecting (the Python client
	// connects when it sends); a connection silent for this long holds a slot for nothing.
	DefaultFirstMessageTimeout = 10 * time.Second
	// Three TTLs: a sender silent this long is out of the view already, and its slot is
	// given back.
	DefaultIdleTimeout = 90 * time.Second
	// rejectLogInterval is how often one reject reason may be logged: a flood of garbage
	// must not turn into a flood of log lines.
	rejectLogInterval = 10 * time.Second
)

// Disconnect reasons, the values of a disconnects-by-reason counter.
const (
	DisconnectClientClosed       = "client_closed"        // the peer closed (or its process exited)
	DisconnectGarbage            = "garbage"              // MaxConsecutiveRejects rejects in a row
	DisconnectTooManyConnections = "too_many_connections" // refused at accept: over MaxConnections
	DisconnectReadError          = "read_error"           // the socket failed
	DisconnectShutdown           = "shutdown"             // the daemon closed it (Close or ctx done)
	// refused at accept: the uid already holds MaxConnectionsPerUID connections
	DisconnectTooManyConnectionsPerUID = "too_many_connections_per_uid"
	// refused at accept: the uid connects faster than ConnectRatePerUID
	DisconnectConnectRateLimited  = "connect_rate_limited"
	DisconnectFirstMessageTimeout = "first_message_timeout" // no message within FirstMessageTimeout of connecting
	DisconnectIdleTimeout         = "idle_timeout"          // no message for IdleTimeout
)

var disconnectReasons = [...]string{
	DisconnectClientClosed, DisconnectGarbage, DisconnectTooManyConnections,
	DisconnectReadError, DisconnectShutdown,
	DisconnectTooManyConnectionsPerUID, DisconnectConnectRateLimited,
	DisconnectFirstMessageTimeout, DisconnectIdleTimeout,
}

// DisconnectReasons returns every disconnect reason, for exporting each at zero.
func DisconnectReasons() []string { return append([]string(nil), disconnectReasons[:]...) }

// ServerOptions configure a Server. NewServer fills zero fields from
// DefaultServerOptions, a convenience for tests and embedders; the daemon's
// configuration passes every field, so Check sees what the user set.
type ServerOptions struct {
	Path                  string
	Mode                  os.FileMode // socket file mode; the directory, if created, gets x where r is set
	Group                 string      // "" (leave as is), a group name or a numeric gid
	MaxConnections        int
	MaxMessageBytes       int
	RatePerSecond         float64 // per connection
	Burst                 int
	MaxConsecutiveRejects int
	MaxConnectionsPerUID  int     // by the peer's uid at connect (SO_PEERCRED)
	ConnectRatePerUID     float64 // connects per second per uid
	ConnectBurstPerUID    int
	FirstMessageTimeout   time.Duration // close a connection that sends nothing this long after connecting
	IdleTimeout           time.Duration // close a connection that sends nothing for this long
	// ReadPace, when positive, reads every connection once per ReadPace (all that has
	// arrived since, without waiting) instead of as each message arrives: the daemon
	// publishes one view per poll anyway, and a wakeup per message was most of an idle
	// daemon's CPU (scheduler wakeups on a many-core host, not work). A paced socket is
	// taken out of the runtime's poller, so a message's arrival wakes nothing at all.
	// Senders' messages wait in their socket buffers meanwhile; the client's sends do
	// not block. 0, the default: as each message arrives. The daemon sets it to the
	// poll interval.
	ReadPace time.Duration
	Clock    clock.Clock
}

// DefaultServerOptions returns the defaults of every option (Group "": the daemon's own
// group; Clock nil: the wall clock). package config reads its defaults from here.
func DefaultServerOptions() ServerOptions {
	return ServerOptions{
		Path:                  DefaultSocketPath,
		Mode:                  DefaultSocketMode,
		MaxConnections:        DefaultMaxConnections,
		MaxMessageBytes:       DefaultMaxMessageBytes,
		RatePerSecond:         DefaultRatePerSecond,
		Burst:                 DefaultBurst,
		MaxConsecutiveRejects: DefaultMaxConsecutiveRejects,
		MaxConnectionsPerUID:  DefaultMaxConnectionsPerUID,
		ConnectRatePerUID:     DefaultConnectRatePerUID,
		ConnectBurstPerUID:    DefaultConnectBurstPerUID,
		FirstMessageTimeout:   DefaultFirstMessageTimeout,
		IdleTimeout:           DefaultIdleTimeout,
	}
}

// maxReadPace bounds ReadPace: longer, and a sender's socket buffer could fill between
// two reads at the message rate the server allows.
const maxReadPace = time.Minute

// maxSocketPath is the longest unix socket path: sun_path is 108 bytes including the
// terminating NUL.
const maxSocketPath = 107

// Check reports every option the server cannot run with, one call per problem. field is
// the ServerOptions field's name; problem says what is wrong and what to use without
// naming the field, so a caller that reads the options from elsewhere (package config's
// YAML keys and flags) can name the key the user wrote. Whether Group exists is a fact
// of the host, not of the options: NewServer looks it up.
func (o ServerOptions) Check(report func(field, problem string)) {
	switch {
	case !filepath.IsAbs(o.Path):
		report("Path", fmt.Sprintf("%q is not an absolute path; use one like %q", o.Path, DefaultSocketPath))
	case len(o.Path) > maxSocketPath:
		report("Path", fmt.Sprintf("%q is %d bytes long; a unix socket path may be at most %d bytes, so use a shorter directory", o.Path, len(o.Path), maxSocketPath))
	}
	switch {
	case o.Mode&^os.ModePerm != 0:
		report("Mode", fmt.Sprintf("%#04o has bits outside 0777; use permission bits only, like \"%#04o\"", uint32(o.Mode), uint32(DefaultSocketMode)))
	case o.Mode&0o666 == 0:
		// Without r or w for anyone, only root could connect: surely a slip.
		report("Mode", fmt.Sprintf("%#04o lets no one but root connect; grant read and write to the senders, like \"%#04o\"", uint32(o.Mode), uint32(DefaultSocketMode)))
	}
	atLeastOne := func(field string, n, def int) {
		if n < 1 {
			report(field, fmt.Sprintf("%d is out of range; use at least 1, like %d", n, def))
		}
	}
	atLeastOne("MaxConnections", o.MaxConnections, DefaultMaxConnections)
	atLeastOne("MaxMessageBytes", o.MaxMessageBytes, DefaultMaxMessageBytes)
	if !(o.RatePerSecond > 0) || math.IsInf(o.RatePerSecond, 0) {
		report("RatePerSecond", fmt.Sprintf("%g is out of range; use a positive number of messages per second, like %d", o.RatePerSecond, DefaultRatePerSecond))
	}
	atLeastOne("Burst", o.Burst, DefaultBurst)
	atLeastOne("MaxConsecutiveRejects", o.MaxConsecutiveRejects, DefaultMaxConsecutiveRejects)
	atLeastOne("MaxConnectionsPerUID", o.MaxConnectionsPerUID, DefaultMaxConnectionsPerUID)
	if !(o.ConnectRatePerUID > 0) || math.IsInf(o.ConnectRatePerUID, 0) {
		report("ConnectRatePerUID", fmt.Sprintf("%g is out of range; use a positive number of connects per second, like %d", o.ConnectRatePerUID, DefaultConnectRatePerUID))
	}
	atLeastOne("ConnectBurstPerUID", o.ConnectBurstPerUID, DefaultConnectBurstPerUID)
	if o.ReadPace < 0 || o.ReadPace > maxReadPace {
		report("ReadPace", fmt.Sprintf("%s is out of range; use 0 (read each message as it arrives) up to %s", durfmt.Format(o.ReadPace), durfmt.Format(maxReadPace)))
	}
	// Under a second, a client that connects and then samples its GPUs (a first
	// memory_stats call can take that long) would be cut off.
	atLeastASecond := func(field string, d, def time.Duration) {
		if d < time.Second {
			report(field, fmt.Sprintf("%s is out of range; use at least 1s, like %s", d, def))
		}
	}
	atLeastASecond("FirstMessageTimeout", o.FirstMessageTimeout, DefaultFirstMessageTimeout)
	atLeastASecond("IdleTimeout", o.IdleTimeout, DefaultIdleTimeout)
}

// Validate reports every problem Check finds, each prefixed with its field, or nil.
func (o ServerOptions) Validate() error {
	var errs []error
	o.Check(func(field, problem string) {
		errs = append(errs, fmt.Errorf("push: %s: %s", field, problem))
	})
	return errors.Join(errs...)
}

// withDefaults fills zero fields from DefaultServerOptions.
func (o ServerOptions) withDefaults() ServerOptions {
	def := DefaultServerOptions()
	if o.Path == "" {
		o.Path = def.Path
	}
	if o.Mode == 0 {
		o.Mode = def.Mode
	}
	if o.MaxConnections == 0 {
		o.MaxConnections = def.MaxConnections
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = def.MaxMessageBytes
	}
	if o.RatePerSecond == 0 {
		o.RatePerSecond = def.RatePerSecond
	}
	if o.Burst == 0 {
		o.Burst = def.Burst
	}
	if o.MaxConsecutiveRejects == 0 {
		o.MaxConsecutiveRejects = def.MaxConsecutiveRejects
	}
	if o.MaxConnectionsPerUID == 0 {
		o.MaxConnectionsPerUID = def.MaxConnectionsPerUID
	}
	if o.ConnectRatePerUID == 0 {
		o.ConnectRatePerUID = def.ConnectRatePerUID
	}
	if o.ConnectBurstPerUID == 0 {
		o.ConnectBurstPerUID = def.ConnectBurstPerUID
	}
	if o.FirstMessageTimeout == 0 {
		o.FirstMessageTimeout = def.FirstMessageTimeout
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = def.IdleTimeout
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	return o
}

// Stats are the server's counters, for the collector. Connections equals
// ConnectionsAccepted − ConnectionsClosed.
type Stats struct {
	Connections         int               // open now
	ConnectionsAccepted uint64            // accepted by the kernel, including those refused over the limit
	ConnectionsClosed   uint64            // closed for any reason, see Disconnects
	MessagesAccepted    uint64            // messages stored
	Rejected            map[string]uint64 // by reject reason; every reason is present
	Disconnects         map[string]uint64 // by disconnect reason; every reason is present
	BytesReceived       uint64            // payload bytes read, accepted or not
	Series              int               // (process, GPU, pool) the store holds, see StoreOptions
}

// Server accepts push connections on a unix SOCK_SEQPACKET socket and feeds a Store.
type Server struct {
	opts   ServerOptions
	gid    int // -1: leave the group alone
	store  *Store
	logger *zap.Logger
	clock  clock.Clock
	bufs   sync.Pool // *[]byte of MaxMessageBytes+1, shared by all connections
	pace   *pacer    // nil: read each message as it arrives (ReadPace 0)

	mu      sync.Mutex
	ln      *net.UnixListener
	inode   uint64 // of the socket file we bound, so Close removes only our own
	conns   map[uint64]*conn
	perUID  map[uint32]int          // open connections by peer uid
	connect map[uint32]*tokenBucket // connect rate by peer uid
	nextID  uint64
	closing bool
	wg      sync.WaitGroup // connection goroutines

	done      chan struct{}
	closeOnce sync.Once
	closeErr  error

	accepted, closed, messages, bytes atomic.Uint64
	rejected                          [len(reasons)]atomic.Uint64
	disconnects                       [len(disconnectReasons)]atomic.Uint64

	logs logLimiter

	// processStart reads a process's start time (procinfo); nil: not recorded.
	processStart func(pid uint32) (uint64, error)
}

// WithProcessStart makes the server record, whenever a connection first speaks for a
// PID, that process's start time (clock ticks after boot, field 22 of /proc/PID/stat),
// so the join can tell the sender from an unrelated process that reuses its PID later.
// Call it before Serve. An error leaves the start time unknown (0), never refuses.
func (s *Server) WithProcessStart(f func(pid uint32) (uint64, error)) *Server {
	s.processStart = f
	return s
}

func (s *Server) startOf(pid uint32) uint64 {
	if s.processStart == nil {
		return 0
	}
	st, err := s.processStart(pid)
	if err != nil {
		return 0
	}
	return st
}

// NewServer fills opts' zero fields with the defaults, checks them (Check) and returns a
// Server that has not yet touched the filesystem.
func NewServer(opts ServerOptions, store *Store, logger *zap.Logger) (*Server, error) {
	if store == nil {
		return nil, errors.New("push: NewServer needs a Store")
	}
	if logger == nil {
		logger = zap.NewNop()
	}
	opts = opts.withDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	gid, err := lookupGroup(opts.Group)
	if err != nil {
		return nil, err
	}
	s := &Server{
		opts: opts, gid: gid, store: store, logger: logger, clock: opts.Clock,
		conns:   make(map[uint64]*conn),
		perUID:  make(map[uint32]int),
		connect: make(map[uint32]*tokenBucket),
		done:    make(chan struct{}),
		logs:    logLimiter{last: make(map[string]time.Time), suppressed: make(map[string]uint64)},
	}
	if opts.ReadPace > 0 {
		s.pace = newPacer()
	}
	size := opts.MaxMessageBytes + 1 // one more byte than allowed tells "too large" apart
	s.bufs.New = func() any { b := make([]byte, size); return &b }
	return s, nil
}

func lookupGroup(g string) (int, error) {
	if g == "" {
		return -1, nil
	}
	if n, err := strconv.Atoi(g); err == nil && n >= 0 {
		return n, nil
	}
	grp, err := user.LookupGroup(g)
	if err != nil {
		return 0, fmt.Errorf("push socket group %q: %w (give an existing group name or a numeric gid)", g, err)
	}
	n, err := strconv.Atoi(grp.Gid)
	if err != nil {
		return 0, fmt.Errorf("push socket group %q has non-numeric gid %q: %w", g, grp.Gid, err)
	}
	return n, nil
}

// Serve accepts connections until ctx is done or Close is called, then closes everything
// (as Close does) and returns nil. Listen must have succeeded first.
func (s *Server) Serve(ctx context.Context) error {
	s.mu.Lock()
	ln := s.ln
	s.mu.Unlock()
	if ln == nil {
		return errors.New("push: Serve called before a successful Listen")
	}
	stop := context.AfterFunc(ctx, func() { _ = s.Close() })
	defer stop()
	reaped := make(chan struct{})
	go func() { defer close(reaped); s.reapLoop() }()
	defer func() { <-reaped }() // Close (below, or by ctx) has closed done
	if s.pace != nil {
		paced := make(chan struct{})
		go func() { defer close(paced); s.pace.run(s.clock, s.opts.ReadPace, s.done) }()
		defer func() { <-paced }()
	}
	const minBackoff, maxBackoff = 5 * time.Millisecond, time.Second
	backoff := minBackoff
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			select {
			case <-s.done:
				return s.Close()
			default:
			}
			// EMFILE and friends: back off rather than spin; the connections already
			// open keep being served meanwhile.
			s.logger.Warn("accepting a push connection failed; retrying", zap.Error(err), zap.Duration("backoff", backoff))
			select {
			case <-s.done:
				return s.Close()
			case <-s.clock.After(backoff):
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = minBackoff
		s.accepted.Add(1)
		s.start(c)
	}
}

// conn is one accepted connection.
type conn struct {
	c *net.UnixConn // until detach; then closed, and raw holds the socket
	// raw is the socket once a paced read loop has taken it out of the runtime's
	// poller (detach, server_linux.go); mu orders its reads against close, so a closed
	// descriptor's number, which the kernel may hand out again, is never read.
	raw struct {
		mu       sync.Mutex
		fd       int
		detached bool
		closed   bool
	}
	uid         uint32
	hasUID      bool // the peer's credentials were readable at accept
	connectedAt time.Time
	lastMsg     atomic.Int64 // UnixNano of the latest message received, 0 before the first
	deadline    atomic.Value // string: the disconnect reason when the reaper closed it
	// The PID the connection last spoke for and that process's start time; only its
	// read loop touches them.
	pid   uint32
	start uint64
}

// start registers c and serves it on its own goroutine, or refuses it when over a limit
// or shutting down. The refusals come before any goroutine or buffer, so a sender that
// connects in a loop costs an accept, a getsockopt and a close.
func (s *Server) start(c *net.UnixConn) {
	uid, hasUID := peerUID(c)
	now := s.clock.Now()
	s.mu.Lock()
	refuse := ""
	switch {
	case s.closing:
		refuse = DisconnectShutdown
	case len(s.conns) >= s.opts.MaxConnections:
		refuse = DisconnectTooManyConnections
	case hasUID && s.perUID[uid] >= s.opts.MaxConnectionsPerUID:
		refuse = DisconnectTooManyConnectionsPerUID
	case hasUID && !s.connectBucket(uid, now).take(now, s.opts.ConnectRatePerUID, s.opts.ConnectBurstPerUID):
		refuse = DisconnectConnectRateLimited
	}
	if refuse != "" {
		s.mu.Unlock()
		_ = c.Close()
		s.countDisconnect(refuse)
		s.logRefusal(refuse, uid)
		return
	}
	s.nextID++
	id := s.nextID
	cn := &conn{c: c, uid: uid, hasUID: hasUID, connectedAt: now}
	s.conns[id] = cn
	if hasUID {
		s.perUID[uid]++
	}
	s.wg.Add(1)
	s.mu.Unlock()
	go s.serveConn(cn, id)
}

// connectBucket returns uid's connect bucket, made full for a uid not seen before. The
// map is pruned of buckets that have refilled (their uid has been quiet): those are
// the same as a new one, and a host has few uids, but nothing must grow without bound.
func (s *Server) connectBucket(uid uint32, now time.Time) *tokenBucket {
	b := s.connect[uid]
	if b != nil {
		return b
	}
	if len(s.connect) >= maxConnectBuckets {
		for u, ob := range s.connect {
			if ob.full(now, s.opts.ConnectRatePerUID, s.opts.ConnectBurstPerUID) {
				delete(s.connect, u)
			}
		}
	}
	b = &tokenBucket{tokens: float64(s.opts.ConnectBurstPerUID), last: now}
	s.connect[uid] = b
	return b
}

// maxConnectBuckets is how many uids' connect buckets are kept before refilled ones
// are pruned.
const maxConnectBuckets = 1024

func (s *Server) logRefusal(reason string, uid uint32) {
	ok, suppressed := s.logs.allow(reason, s.clock.Now())
	if !ok {
		return
	}
	switch reason {
	case DisconnectTooManyConnections:
		s.logger.Warn("refused a push connection: too many connections; raise --push.max-connections if this is expected",
			zap.Int("max_connections", s.opts.MaxConnections), zap.Uint64("suppressed", suppressed))
	case DisconnectTooManyConnectionsPerUID:
		s.logger.Warn("refused a push connection: its user holds too many connections; raise --push.max-connections-per-uid if this is expected",
			zap.Uint32("uid", uid), zap.Int("max_connections_per_uid", s.opts.MaxConnectionsPerUID), zap.Uint64("suppressed", suppressed))
	case DisconnectConnectRateLimited:
		s.logger.Warn("refused a push connection: its user connects too fast (a client reconnecting in a loop?); raise --push.connect-rate-per-uid if this is expected",
			zap.Uint32("uid", uid), zap.Float64("connect_rate_per_uid", s.opts.ConnectRatePerUID), zap.Uint64("suppressed", suppressed))
	}
}

func (s *Server) countDisconnect(reason string) {
	for i, r := range disconnectReasons {
		if r == reason {
			s.disconnects[i].Add(1)
		}
	}
	s.closed.Add(1)
}

// close closes the connection, whichever descriptor holds it now; safe to call more than
// once and from any goroutine (the reaper, Close, the read loop).
func (cn *conn) close() {
	cn.raw.mu.Lock()
	cn.raw.closed = true
	detached := cn.raw.detached
	if detached && cn.raw.fd >= 0 {
		_ = unix.Close(cn.raw.fd)
		cn.raw.fd = -1
	}
	cn.raw.mu.Unlock()
	if !detached {
		_ = cn.c.Close()
	}
}

func (s *Server) serveConn(cn *conn, id uint64) {
	defer s.wg.Done()
	reason := s.readLoop(cn, id)
	cn.close()
	// The data goes before the connection is forgotten, so nobody sees a closed
	// connection's series in a later snapshot.
	s.store.Remove(id)
	s.mu.Lock()
	delete(s.conns, id)
	if cn.hasUID {
		if s.perUID[cn.uid] <= 1 {
			delete(s.perUID, cn.uid)
		} else {
			s.perUID[cn.uid]--
		}
	}
	if r, ok := cn.deadline.Load().(string); ok && reason == DisconnectReadError {
		reason = r
	}
	if s.closing && reason == DisconnectReadError {
		reason = DisconnectShutdown
	}
	s.mu.Unlock()
	s.countDisconnect(reason)
}

// reapInterval is how often connections are checked against their deadlines: a
// fraction of the shorter one, so a connection is closed at most a quarter late.
func (s *Server) reapInterval() time.Duration {
	return min(s.opts.FirstMessageTimeout, s.opts.IdleTimeout) / 4
}

// reapLoop closes connections past their first-message or idle deadline, on the
// injected clock, until the server closes.
func (s *Server) reapLoop() {
	t := s.clock.NewTicker(s.reapInterval())
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C():
			s.reap(s.clock.Now())
		}
	}
}

func (s *Server) reap(now time.Time) {
	s.mu.Lock()
	var late []*conn
	for _, cn := range s.conns {
		reason := ""
		if last := cn.lastMsg.Load(); last == 0 {
			if now.Sub(cn.connectedAt) > s.opts.FirstMessageTimeout {
				reason = DisconnectFirstMessageTimeout
			}
		} else if now.Sub(time.Unix(0, last)) > s.opts.IdleTimeout {
			reason = DisconnectIdleTimeout
		}
		if reason != "" && cn.deadline.CompareAndSwap(nil, reason) {
			late = append(late, cn)
		}
	}
	s.mu.Unlock()
	for _, cn := range late {
		// The read loop sees the close as a read error and reports the reason set above.
		cn.close()
	}
}

// tokenBucket is a per-connection rate limit driven by the injected clock.
type tokenBucket struct {
	tokens float64
	last   time.Time
}

// full reports whether the bucket has refilled by now.
func (b *tokenBucket) full(now time.Time, rate float64, burst int) bool {
	return b.tokens+now.Sub(b.last).Seconds()*rate >= float64(burst)
}

func (b *tokenBucket) take(now time.Time, rate float64, burst int) bool {
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.tokens = min(float64(burst), b.tokens+dt*rate)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// ingest runs one received message through rate limit, size, credentials, decoding and
// the store, in that order (the cheapest refusals first).
func (s *Server) ingest(cn *conn, id uint64, bucket *tokenBucket, b []byte, truncated bool, oob []byte) (Cred, *RejectError) {
	// Credentials first, even for a message about to be refused: parsing them also
	// closes any file descriptors a hostile sender passed along.
	cred, credErr := credentials(oob)
	if !bucket.take(s.clock.Now(), s.opts.RatePerSecond, s.opts.Burst) {
		return cred, reject(ReasonRateLimited, "more than %g messages/s (burst %d) on one connection", s.opts.RatePerSecond, s.opts.Burst)
	}
	if truncated {
		return cred, reject(ReasonTooLarge, "message larger than %d bytes", s.opts.MaxMessageBytes)
	}
	if credErr != nil {
		return cred, credErr
	}
	if cred.PID != cn.pid {
		// Once per PID change (the first message, or a forked child's takeover), not per
		// message: a procfs read is dearer than the rest of a message's handling.
		cn.pid, cn.start = cred.PID, s.startOf(cred.PID)
	}
	cred.StartTicks = cn.start
	msg, err := Decode(b)
	if err == nil {
		err = s.store.Update(id, cn.connectedAt, cred, msg)
	}
	if err != nil {
		var re *RejectError
		if !errors.As(err, &re) {
			re = reject(ReasonSchema, "%v", err)
		}
		return cred, re
	}
	return cred, nil
}

// logLimiter allows one log line per key per rejectLogInterval and counts the rest.
type logLimiter struct {
	mu         sync.Mutex
	last       map[string]time.Time
	suppressed map[string]uint64
}

func (l *logLimiter) allow(key string, now time.Time) (ok bool, suppressed uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if last, seen := l.last[key]; seen && now.Sub(last) < rejectLogInterval {
		l.suppressed[key]++
		return false, 0
	}
	l.last[key] = now
	suppressed = l.suppressed[key]
	l.suppressed[key] = 0
	return true, suppressed
}

func (s *Server) logReject(e *RejectError, cred Cred, id uint64) {
	ok, suppressed := s.logs.allow(e.Reason, s.clock.Now())
	if !ok {
		return
	}
	fields := []zap.Field{
		zap.String("reason", e.Reason), zap.String("detail", e.Detail),
		zap.Uint32("pid", cred.PID), zap.Uint64("conn", id),
		zap.Uint64("suppressed_since_last_line", suppressed),
	}
	if e.Reason == ReasonNoPID {
		fields = append(fields, zap.String("hint",
			"the sender runs in a PID namespace this daemon cannot see; run the daemon in the host PID namespace (Kubernetes hostPID: true)"))
	}
	s.logger.Warn("rejected a push message", fields...)
}

// Stats returns a copy of the server's counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	open := len(s.conns)
	s.mu.Unlock()
	st := Stats{
		Connections:         open,
		ConnectionsAccepted: s.accepted.Load(),
		ConnectionsClosed:   s.closed.Load(),
		MessagesAccepted:    s.messages.Load(),
		BytesReceived:       s.bytes.Load(),
		Series:              s.store.Stats().Series,
		Rejected:            make(map[string]uint64, len(reasons)),
		Disconnects:         make(map[string]uint64, len(disconnectReasons)),
	}
	for i, r := range reasons {
		st.Rejected[r] = s.rejected[i].Load()
	}
	for i, r := range disconnectReasons {
		st.Disconnects[r] = s.disconnects[i].Load()
	}
	return st
}

// Close stops accepting, closes every connection (their data leaves the store), waits for
// their goroutines and removes the socket file if it is still the one this server bound.
// It is safe to call more than once and from several goroutines.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.done)
		s.mu.Lock()
		s.closing = true
		ln := s.ln
		conns := make([]*conn, 0, len(s.conns))
		for _, c := range s.conns {
			conns = append(conns, c)
		}
		s.mu.Unlock()
		var errs []error
		if ln != nil {
			if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				errs = append(errs, fmt.Errorf("closing push socket: %w", err))
			}
		}
		for _, c := range conns {
			c.close()
		}
		s.wg.Wait()
		if ln != nil {
			if err := s.removeOwnSocket(); err != nil {
				errs = append(errs, err)
			}
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}
