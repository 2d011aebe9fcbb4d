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

	"github.com/vram-exporter/vram_exporter/clock"
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
)

var disconnectReasons = [...]string{
	DisconnectClientClosed, DisconnectGarbage, DisconnectTooManyConnections,
	DisconnectReadError, DisconnectShutdown,
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
	Clock                 clock.Clock
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
	}
}

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
}

// Server accepts push connections on a unix SOCK_SEQPACKET socket and feeds a Store.
type Server struct {
	opts   ServerOptions
	gid    int // -1: leave the group alone
	store  *Store
	logger *zap.Logger
	clock  clock.Clock
	bufs   sync.Pool // *[]byte of MaxMessageBytes+1, shared by all connections

	mu      sync.Mutex
	ln      *net.UnixListener
	inode   uint64 // of the socket file we bound, so Close removes only our own
	conns   map[uint64]*net.UnixConn
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
		conns: make(map[uint64]*net.UnixConn),
		done:  make(chan struct{}),
		logs:  logLimiter{last: make(map[string]time.Time), suppressed: make(map[string]uint64)},
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

// start registers c and serves it on its own goroutine, or refuses it when over the limit
// or shutting down.
func (s *Server) start(c *net.UnixConn) {
	s.mu.Lock()
	switch {
	case s.closing:
		s.mu.Unlock()
		_ = c.Close()
		s.countDisconnect(DisconnectShutdown)
		return
	case len(s.conns) >= s.opts.MaxConnections:
		s.mu.Unlock()
		_ = c.Close()
		s.countDisconnect(DisconnectTooManyConnections)
		if ok, suppressed := s.logs.allow(DisconnectTooManyConnections, s.clock.Now()); ok {
			s.logger.Warn("refused a push connection: too many connections; raise --push.max-connections if this is expected",
				zap.Int("max_connections", s.opts.MaxConnections), zap.Uint64("suppressed", suppressed))
		}
		return
	}
	s.nextID++
	id := s.nextID
	s.conns[id] = c
	s.wg.Add(1)
	s.mu.Unlock()
	go s.serveConn(c, id)
}

func (s *Server) countDisconnect(reason string) {
	for i, r := range disconnectReasons {
		if r == reason {
			s.disconnects[i].Add(1)
		}
	}
	s.closed.Add(1)
}

func (s *Server) serveConn(c *net.UnixConn, id uint64) {
	defer s.wg.Done()
	reason := s.readLoop(c, id)
	_ = c.Close()
	// The data goes before the connection is forgotten, so nobody sees a closed
	// connection's series in a later snapshot.
	s.store.Remove(id)
	s.mu.Lock()
	delete(s.conns, id)
	if s.closing && reason == DisconnectReadError {
		reason = DisconnectShutdown
	}
	s.mu.Unlock()
	s.countDisconnect(reason)
}

// tokenBucket is a per-connection rate limit driven by the injected clock.
type tokenBucket struct {
	tokens float64
	last   time.Time
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
func (s *Server) ingest(id uint64, connectedAt time.Time, bucket *tokenBucket, b []byte, truncated bool, oob []byte) (Cred, *RejectError) {
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
	msg, err := Decode(b)
	if err == nil {
		err = s.store.Update(id, connectedAt, cred, msg)
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
		conns := make([]*net.UnixConn, 0, len(s.conns))
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
			_ = c.Close()
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
