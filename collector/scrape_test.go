package collector

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"github.com/vram-exporter/vram_exporter/internal/testenv"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/join"
	"github.com/vram-exporter/vram_exporter/push"
)

// swapView is a ViewSource whose view a test replaces, as the join does every tick.
type swapView struct{ p atomic.Pointer[join.View] }

func (s *swapView) Latest() *join.View { return s.p.Load() }

func newSwapView(v *join.View) *swapView {
	s := &swapView{}
	s.p.Store(v)
	return s
}

// mutablePush is push stats that change between scrapes of one view.
type mutablePush struct {
	mu sync.Mutex
	s  push.Stats
}

func (m *mutablePush) Stats() push.Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.s
}

// othersRegistry stands in for the daemon's Go/process/build-info registry with values a
// test can compare: one family sorting before vram_*, one among them.
func othersRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "go_test_constant", Help: "A constant."})
	g.Set(7)
	b := prometheus.NewGauge(prometheus.GaugeOpts{Name: "vram_exporter_build_info", Help: "Build.", ConstLabels: prometheus.Labels{"version": "x"}})
	b.Set(1)
	reg.MustRegister(g, b)
	return reg
}

type scrapeRig struct {
	views *swapView
	push  *mutablePush
	h     *Handler
	slow  http.Handler // today's path, promhttp over Transactional
}

func newScrapeRig(t testing.TB, v *join.View, om bool) *scrapeRig {
	t.Helper()
	r := &scrapeRig{views: newSwapView(v), push: &mutablePush{s: fixturePushStats()}}
	c := New(r.views, r.push, zap.NewNop()).WithNow(func() time.Time { return now })
	others := othersRegistry()
	r.h = NewHandler(c, ScrapeOptions{Sampled: others, MaxRequestsInFlight: 8, EnableOpenMetrics: om})
	// Today's path: promhttp instrumenting itself into a registry served next to others.
	handlerReg := prometheus.NewRegistry()
	r.slow = promhttp.InstrumentMetricHandler(handlerReg, promhttp.HandlerForTransactional(
		NewTransactional(c, prometheus.Gatherers{others, handlerReg}), promhttp.HandlerOpts{EnableOpenMetrics: om}))
	return r
}

func get(t testing.TB, h http.Handler, target string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("GET", target, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// body returns the response body, un-gzipped when it is gzip, checking that it is a
// single gzip member (readers that stop after the first member see everything).
func body(t testing.TB, w *httptest.ResponseRecorder) string {
	t.Helper()
	switch w.Header().Get("Content-Encoding") {
	case "gzip":
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(w.Body.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		out, err := io.ReadAll(zr) // every frame
		if err != nil {
			t.Fatalf("zstd body does not decode: %v", err)
		}
		return string(out)
	default:
		return w.Body.String()
	}
	br := bytes.NewReader(w.Body.Bytes())
	zr, err := gzip.NewReader(br)
	if err != nil {
		t.Fatal(err)
	}
	zr.Multistream(false)
	out, err := io.ReadAll(zr) // also checks the CRC-32 and length
	if err != nil {
		t.Fatalf("gzip body does not decode: %v", err)
	}
	if br.Len() != 0 {
		t.Fatalf("gzip body has data after its member")
	}
	return string(out)
}

// families splits an exposition into its families (HELP, TYPE and sample lines), minus
// the lines whose values differ per build.
func families(t testing.TB, text string) map[string]string {
	t.Helper()
	out := map[string]string{}
	cur := ""
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if strings.HasPrefix(l, "# HELP ") {
			// The full line: in OpenMetrics a counter's family drops _total, so
			// vram_push_connections (gauge) and vram_push_connections_total share a name.
			cur = l
			if _, dup := out[cur]; dup {
				t.Fatalf("family %s appears twice", cur)
			}
		}
		if l == "# EOF" || strings.HasPrefix(l, "vram_collector_duration_seconds{") {
			continue
		}
		out[cur] += l + "\n"
	}
	return out
}

// The cached exposition says the same as promhttp's, family for family, in every format
// and coding Prometheus negotiates.
func TestHandlerMatchesPromhttp(t *testing.T) {
	for _, tc := range []struct {
		name, accept, encoding string
		om                     bool
	}{
		{"text", "", "", false},
		{"text gzip", "text/plain;version=0.0.4", "gzip", false},
		{"prometheus", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5", "gzip", false},
		{"openmetrics", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5", "", true},
		{"openmetrics gzip", "application/openmetrics-text;version=1.0.0", "gzip", true},
		{"zstd", "", "zstd", false},
		{"openmetrics zstd", "application/openmetrics-text;version=1.0.0", "zstd;q=1, gzip;q=0.5", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newScrapeRig(t, fixtureView(), tc.om)
			hdr := map[string]string{"Accept": tc.accept, "Accept-Encoding": tc.encoding}
			got, want := get(t, r.h, "/metrics", hdr), get(t, r.slow, "/metrics", hdr)
			for _, k := range []string{"Content-Type", "Content-Encoding", "Vary"} {
				if g, w := got.Header().Values(k), want.Header().Values(k); strings.Join(g, ",") != strings.Join(w, ",") {
					t.Errorf("%s: %q, promhttp %q", k, g, w)
				}
			}
			gb, wb := body(t, got), body(t, want)
			if tc.om && !strings.HasSuffix(gb, "\n# EOF\n") {
				t.Errorf("OpenMetrics body does not end in # EOF")
			}
			gf, wf := families(t, gb), families(t, wb)
			if len(gf) != len(wf) {
				t.Errorf("%d families, promhttp %d", len(gf), len(wf))
			}
			for name, w := range wf {
				if gf[name] != w {
					t.Errorf("family %s:\n%s\npromhttp:\n%s", name, gf[name], w)
				}
			}
		})
	}
}

func TestHandlerProtobuf(t *testing.T) {
	r := newScrapeRig(t, fixtureView(), false)
	w := get(t, r.h, "/metrics", map[string]string{"Accept": string(expfmt.NewFormat(expfmt.TypeProtoDelim))})
	dec := expfmt.NewDecoder(bytes.NewReader(w.Body.Bytes()), expfmt.NewFormat(expfmt.TypeProtoDelim))
	n := 0
	seen := map[string]bool{}
	for {
		mf := new(dto.MetricFamily)
		if err := dec.Decode(mf); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("family %d: %v", n, err)
		}
		if seen[mf.GetName()] {
			t.Fatalf("%s twice", mf.GetName())
		}
		seen[mf.GetName()] = true
		n++
	}
	if !seen["vram_nvml_up"] || !seen["go_test_constant"] || !seen["vram_push_connections"] {
		t.Errorf("protobuf exposition misses families: %v", seen)
	}
}

// promtool and the linter accept the served bytes (the cached block with the per-scrape
// parts around it), not only the gathered families.
func TestHandlerOutputPassesPromtoolAndLint(t *testing.T) {
	r := newScrapeRig(t, fixtureView(), false)
	text := body(t, get(t, r.h, "/metrics", map[string]string{"Accept-Encoding": "gzip"}))
	problems, err := promlint.New(strings.NewReader(text)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		testenv.Unavailable(t, "promtool not installed (apt-get install prometheus)")
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader([]byte(text))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

// One build per view and format, however many scrapes (concurrent ones included); a new
// view is built afresh; per-scrape families follow their source between ticks.
func TestHandlerEncodesOncePerView(t *testing.T) {
	r := newScrapeRig(t, benchView(true), false)
	builds := 0
	r.h.onBuild = func() { builds++ } // fill runs under the singleflight, one at a time here
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 5 {
				if w := get(t, r.h, "/metrics", map[string]string{"Accept-Encoding": "gzip"}); w.Code != 200 {
					t.Errorf("status %d", w.Code)
				}
			}
		})
	}
	wg.Wait()
	if builds != 1 {
		t.Fatalf("%d builds of one view for 40 scrapes, want 1", builds)
	}
	get(t, r.h, "/metrics", nil) // identity: the block gzip was made from
	if builds != 1 {
		t.Fatalf("identity after gzip built again (%d builds)", builds)
	}
	get(t, r.h, "/metrics", map[string]string{"Accept": "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"})
	if builds != 2 {
		t.Fatalf("a second format: %d builds, want 2", builds)
	}

	r.push.mu.Lock()
	r.push.s.MessagesAccepted = 123456
	r.push.mu.Unlock()
	if b := body(t, get(t, r.h, "/metrics", nil)); !strings.Contains(b, "\nvram_push_messages_total 123456\n") {
		t.Errorf("push counters are not per scrape")
	}
	if builds != 2 {
		t.Fatalf("a live change rebuilt the view")
	}

	small := fixtureView()
	r.views.p.Store(small)
	b := body(t, get(t, r.h, "/metrics", nil))
	if builds != 3 || strings.Contains(b, "bench") {
		t.Fatalf("a new view was not built afresh (builds %d)", builds)
	}
}

func TestHandlerNameFilterGoesThroughPromhttp(t *testing.T) {
	r := newScrapeRig(t, fixtureView(), false)
	b := body(t, get(t, r.h, "/metrics?name[]=vram_nvml_up&name[]=go_test_constant", nil))
	f := families(t, b)
	var names []string
	for n := range f {
		names = append(names, strings.Fields(n)[2])
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "go_test_constant,vram_nvml_up" {
		t.Fatalf("name[] filter served %v", names)
	}
}

func TestHandlerInFlightLimit(t *testing.T) {
	r := newScrapeRig(t, fixtureView(), false)
	for range cap(r.h.sem) {
		r.h.sem <- struct{}{}
	}
	if w := get(t, r.h, "/metrics", nil); w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "Limit of concurrent requests reached (8)") {
		t.Fatalf("over the limit: %d %q", w.Code, w.Body.String())
	}
	<-r.h.sem
	if w := get(t, r.h, "/metrics", nil); w.Code != 200 {
		t.Fatalf("within the limit: %d", w.Code)
	}
}

// The same coding as promhttp for every Accept-Encoding, tie-breaks included.
func TestNegotiateEncodingAsPromhttp(t *testing.T) {
	slow := promhttp.HandlerFor(prometheus.NewRegistry(), promhttp.HandlerOpts{})
	for _, in := range []string{"", "gzip", "GZIP", "gzip, identity", "identity;q=0.5, gzip", "*", "gzip;q=0",
		"br, zstd", "deflate, gzip;q=1.0, *", "gzip;q=0.2, identity;q=0.1", "identity;q=0, *;q=0",
		"zstd", "zstd, gzip", "gzip;q=0.5, zstd", "zstd;q=0"} {
		h := map[string]string{}
		if in != "" {
			h["Accept-Encoding"] = in
		}
		want := get(t, slow, "/metrics", h).Header().Get("Content-Encoding")
		if want == "" {
			want = "identity"
		}
		hdr := http.Header{}
		for k, v := range h {
			hdr.Set(k, v)
		}
		if got := negotiateEncoding(hdr, []string{"identity", "gzip", "zstd"}); got != want {
			t.Errorf("%q: %s, promhttp %s", in, got, want)
		}
	}
}

func TestCRC32Combine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 7, 100, 65536, 100003} {
		a, b := make([]byte, rng.IntN(1000)), make([]byte, n)
		for i := range a {
			a[i] = byte(rng.Uint32())
		}
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		want := crc32.ChecksumIEEE(append(append([]byte{}, a...), b...))
		if got := crc32Combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), int64(len(b))); got != want {
			t.Errorf("len %d: %08x, want %08x", n, got, want)
		}
	}
}

// liveHeap is the heap still reachable after two collections.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// Issue 11: after a large view is replaced by a small one, the memory it needed goes
// back: nothing keeps the large view's encodings or series storage.
func TestHandlerMemoryReturnsAfterALargeView(t *testing.T) {
	r := newScrapeRig(t, fixtureView(), false)
	scrape := func() {
		for _, enc := range []string{"", "gzip"} {
			if w := get(t, r.h, "/metrics", map[string]string{"Accept-Encoding": enc}); w.Code != 200 {
				t.Fatal(w.Code)
			}
		}
	}
	scrape()
	base := liveHeap()
	r.views.p.Store(scrapeView(8, 64, true))
	scrape()
	big := liveHeap()
	r.views.p.Store(fixtureView())
	scrape()
	after := liveHeap()
	t.Logf("live heap: %d KiB with a small view, %d KiB with 8x64, %d KiB after", base>>10, big>>10, after>>10)
	if big < base+1<<20 {
		t.Fatalf("the large view does not show in the heap (%d → %d): the measure cannot fail", base, big)
	}
	if after > base+(big-base)/4 {
		t.Fatalf("live heap %d KiB after the large view went, %d KiB before it came", after>>10, base>>10)
	}
}

// The pooled emitter behind name[] scrapes keeps only what its last scrape needed.
func TestPooledEmitterTrimsToItsLastUse(t *testing.T) {
	c := New(staticView{}, nil, zap.NewNop())
	e := newEmitter()
	c.gatherView(e, scrapeView(8, 64, true))
	e.reset()
	e.trim()
	large := e.retained()
	c.gatherView(e, fixtureView())
	e.reset()
	e.trim()
	small := e.retained()
	t.Logf("retained: %d KiB after 8x64, %d KiB after the small view", large>>10, small>>10)
	if large < 1<<20 || small > large/20 {
		t.Fatalf("retained %d bytes after a small scrape, %d after a large one", small, large)
	}
}

// The handler counts its scrapes as promhttp.InstrumentMetricHandler would: done scrapes
// by code (the in-flight limit's 503s and name[] scrapes included), and the scrapes being
// served, the current one included.
func TestHandlerCountsScrapesAsPromhttp(t *testing.T) {
	r := newScrapeRig(t, fixtureView(), false)
	get(t, r.h, "/metrics", nil)
	get(t, r.h, "/metrics?name[]=vram_nvml_up", nil)
	for range cap(r.h.sem) {
		r.h.sem <- struct{}{}
	}
	get(t, r.h, "/metrics", nil)
	for range cap(r.h.sem) {
		<-r.h.sem
	}
	b := body(t, get(t, r.h, "/metrics", map[string]string{"Accept-Encoding": "gzip"}))
	for _, want := range []string{
		"\npromhttp_metric_handler_requests_total{code=\"200\"} 2\n",
		"\npromhttp_metric_handler_requests_total{code=\"500\"} 0\n",
		"\npromhttp_metric_handler_requests_total{code=\"503\"} 1\n",
		"\npromhttp_metric_handler_requests_in_flight 1\n",
	} {
		if !strings.Contains(b, want) {
			t.Errorf("missing %q", strings.TrimSpace(want))
		}
	}
}

// Each flate.Writer holds about 650 KiB whatever its level. A scratch buffer stays
// pooled for every scraper that ever scraped alongside another; one that kept a writer
// of its own for the few kilobytes of per-scrape families cost the daemon that much
// for good, per such scraper. A new scraper's first gzip scrape of a cached view now
// allocates its scratch buffer and nothing of that size.
func TestGzipScrapeKeepsNoWriterPerScratchBuffer(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // a collection would empty the pools
	r := newScrapeRig(t, fixtureView(), false)
	gz := map[string]string{"Accept-Encoding": "gzip"}
	if w := get(t, r.h, "/metrics", gz); w.Code != 200 { // encodes the view, warms the pools
		t.Fatal(w.Code)
	}
	// Two scrapes at once: the second takes a new scratch buffer from the handler's pool.
	first := r.h.bufs.Get().(*scrapeBuf)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	w := get(t, r.h, "/metrics", gz)
	runtime.ReadMemStats(&after)
	r.h.putBuf(first)
	if w.Code != 200 {
		t.Fatal(w.Code)
	}
	if b := body(t, w); !strings.Contains(b, "promhttp_metric_handler_requests_total") {
		t.Fatalf("gzip body lacks the per-scrape families:\n%s", b)
	}
	got := after.TotalAlloc - before.TotalAlloc
	t.Logf("a new scraper's first gzip scrape allocated %d KiB", got>>10)
	if got > 512<<10 { // its emitter and buffers are about 200 KiB; one writer is over 640
		t.Fatalf("a new scraper's first gzip scrape allocated %d KiB: a flate writer per scratch buffer?", got>>10)
	}
}

// deflatePart's stored and compressed blocks, around a cached block as the handler
// joins them, decode to the three parts in order, for sizes across storeBelow and across
// the 65,535-byte limit of one stored block.
func TestDeflatePartJoinsAroundTheCachedBlock(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	text := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = "abcdefgh \n{}=\"_0123456789"[rng.IntN(25)]
		}
		return b
	}
	var cached bytes.Buffer
	fw, _ := flate.NewWriter(&cached, flate.DefaultCompression)
	block := text(5000)
	_, _ = fw.Write(block)
	_ = fw.Flush()
	for _, n := range []int{0, 1, storeBelow - 1, storeBelow, 70000, 140000} {
		for _, prefix := range []bool{false, true} {
			var head, tail bytes.Buffer
			pre, suf := text(n), text(n+3)
			if prefix {
				deflatePart(&head, pre, false)
			} else {
				pre = nil
			}
			deflatePart(&tail, suf, true)
			all := slices.Concat(head.Bytes(), cached.Bytes(), tail.Bytes())
			out, err := io.ReadAll(flate.NewReader(bytes.NewReader(all)))
			if err != nil {
				t.Fatalf("n=%d prefix=%v: %v", n, prefix, err)
			}
			if want := slices.Concat(pre, block, suf); !bytes.Equal(out, want) {
				t.Fatalf("n=%d prefix=%v: decoded %d bytes, want %d", n, prefix, len(out), len(want))
			}
		}
	}
}
