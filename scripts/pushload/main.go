// Command pushload is a load generator for the vram_exporter push socket: many clients,
// each a connection sending the typical one-GPU message at a fixed rate with
// non-blocking sends (as the Python client does), and, given the daemon's /metrics URL,
// a check that every message it sent was accepted. It talks only to the given unix
// socket and a loopback URL, and always ends within --duration plus a short drain.
//
//	go run ./scripts/pushload --socket /run/vram_exporter/push.sock --clients 1000 \
//	    --rate 10 --duration 30s --metrics-url http://127.0.0.1:9835/metrics
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

const acceptedMetric = "vram_push_messages_total"

type config struct {
	socket     string
	clients    int
	rate       float64 // messages per second per client
	duration   time.Duration
	messages   int // per client; 0: until duration
	metricsURL string
	drain      time.Duration // how long to wait for the daemon to count the last messages
}

type result struct {
	clients     int
	connectErrs uint64
	sent        uint64
	dropped     uint64 // EAGAIN: socket buffer full, sample dropped as the real client would
	sendErrs    uint64
	elapsed     time.Duration
	accepted    int64 // at the daemon, from --metrics-url; -1 when not measured
}

func (r result) loss() int64 {
	if r.accepted < 0 {
		return 0
	}
	return max(0, int64(r.sent)-r.accepted)
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pushload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := config{drain: 10 * time.Second}
	fs.StringVar(&cfg.socket, "socket", "/run/vram_exporter/push.sock", "push socket of the daemon under test")
	fs.IntVar(&cfg.clients, "clients", 1000, "concurrent clients, one connection each")
	fs.Float64Var(&cfg.rate, "rate", 10, "messages per second per client")
	fs.DurationVar(&cfg.duration, "duration", 30*time.Second, "how long to send")
	fs.IntVar(&cfg.messages, "messages", 0, "messages per client (0: send until --duration)")
	fs.StringVar(&cfg.metricsURL, "metrics-url", "", "the daemon's /metrics URL on loopback; when set, check that every message sent was accepted ("+acceptedMetric+")")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if cfg.clients <= 0 || cfg.rate <= 0 || cfg.duration <= 0 || cfg.messages < 0 {
		fmt.Fprintln(stderr, "pushload: --clients, --rate and --duration must be positive")
		return 2
	}
	if cfg.metricsURL != "" {
		if err := checkLoopback(cfg.metricsURL); err != nil {
			fmt.Fprintln(stderr, "pushload:", err)
			return 2
		}
	}
	res, err := load(context.Background(), cfg)
	report(stdout, cfg, res)
	if err != nil {
		fmt.Fprintln(stderr, "pushload:", err)
		return 1
	}
	if res.loss() > 0 {
		fmt.Fprintf(stderr, "pushload: %d messages sent but not accepted by the daemon\n", res.loss())
		return 1
	}
	return 0
}

func report(w io.Writer, cfg config, r result) {
	secs := r.elapsed.Seconds()
	fmt.Fprintf(w, "clients          %d (%d failed to connect)\n", r.clients, r.connectErrs)
	fmt.Fprintf(w, "sent             %d in %.2fs = %.0f msgs/s (target %.0f)\n", r.sent, secs, float64(r.sent)/max(secs, 1e-9), float64(cfg.clients)*cfg.rate)
	fmt.Fprintf(w, "dropped (EAGAIN) %d\n", r.dropped)
	fmt.Fprintf(w, "send errors      %d\n", r.sendErrs)
	if r.accepted < 0 {
		fmt.Fprintln(w, "accepted         n/a (no --metrics-url)")
		return
	}
	fmt.Fprintf(w, "accepted         %d at the daemon\n", r.accepted)
	fmt.Fprintf(w, "loss             %d\n", r.loss())
}

// checkLoopback keeps the tool from ever talking to another machine.
func checkLoopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("--metrics-url: %w", err)
	}
	if u.Scheme != "http" {
		return fmt.Errorf("--metrics-url %q: only http on loopback is supported", raw)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--metrics-url %q: host must be loopback (127.0.0.1, ::1 or localhost)", raw)
	}
	return nil
}

// scrape returns the sum of acceptedMetric over its series.
func scrape(ctx context.Context, c *http.Client, u string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, fmt.Errorf("scraping %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("scraping %s: %s", u, resp.Status)
	}
	var sum float64
	found := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, acceptedMetric)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		if i := strings.LastIndexByte(rest, '}'); i >= 0 {
			rest = rest[i+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, fmt.Errorf("scraping %s: bad value in %q: %w", u, line, err)
		}
		sum += v
		found = true
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("scraping %s: %w", u, err)
	}
	if !found {
		return 0, fmt.Errorf("scraping %s: no %s metric", u, acceptedMetric)
	}
	return int64(sum), nil
}

func message(client int, dropped uint64) []byte {
	return fmt.Appendf(nil, `{"v": 1, "runtime": "torch", "runtime_version": "2.11.0+cu130",
 "labels": {"service": "pushload", "model": "client-%d"}, "client_dropped": %d,
 "devices": [{"uuid": "GPU-5c3e2f4a-1b2c-4d5e-8f90-0123456789ab", "pools": [
  {"name": "torch", "allocated": 68157440, "reserved": 931135488, "peak_allocated": 2214592512,
   "active": 70254592, "inactive_split": 2097152, "alloc_retries": 0, "ooms": 0},
  {"name": "vllm.kv_cache", "parent": "torch", "allocated": 536870912, "reserved": 536870912}]}]}`, client, dropped)
}

func load(ctx context.Context, cfg config) (result, error) {
	res := result{clients: cfg.clients, accepted: -1}
	httpc := &http.Client{Timeout: 5 * time.Second}
	var before int64
	if cfg.metricsURL != "" {
		var err error
		if before, err = scrape(ctx, httpc, cfg.metricsURL); err != nil {
			return res, err
		}
	}
	var sent, dropped, sendErrs, connectErrs atomic.Uint64
	sendCtx, cancel := context.WithTimeout(ctx, cfg.duration)
	defer cancel()
	interval := time.Duration(float64(time.Second) / cfg.rate)
	start := time.Now()
	var wg sync.WaitGroup
	conns := make([]*net.UnixConn, 0, cfg.clients)
	var connsMu sync.Mutex
	for i := range cfg.clients {
		wg.Go(func() {
			c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: cfg.socket, Net: "unixpacket"})
			if err != nil {
				connectErrs.Add(1)
				return
			}
			connsMu.Lock()
			conns = append(conns, c)
			connsMu.Unlock()
			rc, err := c.SyscallConn()
			if err != nil {
				connectErrs.Add(1)
				return
			}
			// Spread the clients over one interval so they do not all send at once.
			offset := time.Duration(int64(interval) * int64(i) / int64(cfg.clients))
			timer := time.NewTimer(offset)
			defer timer.Stop()
			var mine, myDrops uint64
			for n := 0; cfg.messages == 0 || n < cfg.messages; n++ {
				select {
				case <-sendCtx.Done():
					return
				case <-timer.C:
				}
				timer.Reset(interval)
				msg := message(i, myDrops)
				var werr error
				// One write on the raw descriptor, never waiting: a full socket buffer is a
				// dropped sample, as in the real client.
				if err := rc.Write(func(fd uintptr) bool {
					_, werr = unix.Write(int(fd), msg)
					return true
				}); err != nil {
					werr = err
				}
				switch {
				case werr == nil:
					mine++
					sent.Add(1)
				case errors.Is(werr, unix.EAGAIN):
					myDrops++
					dropped.Add(1)
				default:
					sendErrs.Add(1)
					return
				}
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	for _, c := range conns {
		c.Close() // messages already queued are still read by the daemon before the close
	}
	res.sent, res.dropped, res.sendErrs, res.connectErrs = sent.Load(), dropped.Load(), sendErrs.Load(), connectErrs.Load()
	if cfg.metricsURL == "" {
		return res, nil
	}
	// The daemon may still be reading queued messages: wait, bounded, until it counted
	// them all (a counter can only have caught up, never overshoot what we sent, unless
	// another client pushes at the same time).
	deadline := time.Now().Add(cfg.drain)
	for {
		after, err := scrape(ctx, httpc, cfg.metricsURL)
		if err != nil {
			return res, err
		}
		res.accepted = after - before
		if res.accepted >= int64(res.sent) || time.Now().After(deadline) {
			return res, nil
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
