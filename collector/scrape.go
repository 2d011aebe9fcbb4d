package collector

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	// zstd for the name[] path too, so both offer the same codings.
	_ "github.com/prometheus/client_golang/prometheus/promhttp/zstd"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/vram-exporter/vram_exporter/join"
)

// The view changes once per sample tick, but Prometheus (and every dashboard, and a
// second Prometheus) scrapes it many times in between, each asking for the same format.
// So the vram_* families of a view are encoded at most once per (format, compression),
// on the first scrape that asks for it, and served as bytes until the next view. The Go
// runtime, process and build info collectors (ScrapeOptions.Sampled) go into the same
// block: they were most of a scrape's cost (the process collector reads five procfs
// files, two of them large), and gathered once per view they are at most one tick old,
// like every vram_* value. Only what counts scrapes or the push server's traffic
// (promhttp_metric_handler_*, the live vram_push_* families) is encoded per scrape, and
// it is small. The Handler counts its own scrapes under promhttp.InstrumentMetricHandler's
// names, HELP and semantics: that wrapper's Registry gather was a fifth of a scrape.
//
// The per-scrape families are written around the cached block, not merged into it:
// those sorting before the block's first family before it, the rest (promhttp_*, the
// live vram_push_* families) after it.
// The text formats only ask that a family's lines stay together, which they do; the
// family order is the only difference from promhttp's output. For gzip the cached block
// is a run of raw deflate blocks ending in a sync flush, so the per-scrape parts are
// deflated separately and the three are joined into one gzip member (one CRC-32 over
// the whole body), which every gzip reader accepts.

// ScrapeOptions configure a Handler.
type ScrapeOptions struct {
	// Sampled is gathered with the view, once per view and format, into the cached
	// block: the Go runtime, process and build info collectors.
	Sampled prometheus.Gatherer
	// Others are gathered and encoded on every scrape; nil in the daemon. Neither's
	// names may clash with the vram_* or promhttp_metric_handler_* families.
	Others prometheus.Gatherer
	// ErrorLog gets gathering and encoding errors, as promhttp's.
	ErrorLog promhttp.Logger
	// MaxRequestsInFlight bounds concurrent scrapes; more get 503, as with promhttp.
	MaxRequestsInFlight int
	// EnableOpenMetrics offers OpenMetrics in content negotiation, as promhttp's option.
	EnableOpenMetrics bool
	// Timeout bounds requests served through promhttp (those with name[] filters), which
	// gather everything afresh; the cached path does no work that can hang.
	Timeout time.Duration
}

// Handler serves /metrics from the latest view: see the comment above.
type Handler struct {
	c        *Collector
	opts     ScrapeOptions
	formats  []expfmt.Format
	offers   []string
	sem      chan struct{}
	slow     http.Handler // promhttp over Transactional: name[] filters, and the fallback
	bufs     sync.Pool    // *scrapeBuf
	emitters sync.Pool    // *emitter for the cached blocks

	onBuild func() // tests: called for every view gathered

	// As promhttp.InstrumentMetricHandler: scrapes by status code once they are done,
	// and scrapes being served, this one included.
	inFlight atomic.Int64
	codesMu  sync.Mutex
	codes    map[int]uint64
	reqDesc  *metricDesc
	flyDesc  *metricDesc

	mu      sync.Mutex
	accepts map[string]expfmt.Format
	view    *join.View
	cache   map[cacheKey]*encoded
}

// Content codings the Handler offers, in promhttp's order.
const (
	encIdentity = "identity"
	encGzip     = "gzip"
	encZstd     = "zstd"
)

// zstdEncoder compresses at promhttp's level. Frames concatenate into a valid zstd
// stream, so the cached block is one frame and each per-scrape part another.
var zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true))
	if err != nil {
		panic("collector: zstd encoder: " + err.Error()) // only for invalid options
	}
	return e
})

type cacheKey struct {
	format expfmt.Format
	enc    string
}

// encoded is one view's vram_* block in one format and compression.
type encoded struct {
	ready chan struct{} // closed once the fields below are set
	// body is the encoded block: text (or protobuf) for identity, raw deflate blocks
	// ending in a sync flush for gzip, one frame for zstd.
	body  []byte
	crc   uint32 // gzip: CRC-32 of the identity block
	size  int    // gzip: length of the identity block
	first string // name of the block's first family
	err   error
}

// NewHandler returns the /metrics handler for c.
func NewHandler(c *Collector, opts ScrapeOptions) *Handler {
	h := &Handler{c: c, opts: opts, offers: []string{encIdentity, encGzip, encZstd}}
	h.formats = expfmt.DefaultAcceptedFormats()
	if opts.EnableOpenMetrics {
		h.formats = expfmt.DefaultOpenMetricsAcceptedFormats()
	}
	if opts.MaxRequestsInFlight > 0 {
		h.sem = make(chan struct{}, opts.MaxRequestsInFlight)
	}
	all := prometheus.Gatherers{scrapeCounts{h}}
	for _, g := range []prometheus.Gatherer{opts.Sampled, opts.Others} {
		if g != nil {
			all = append(all, g)
		}
	}
	h.slow = promhttp.HandlerForTransactional(NewTransactional(c, all), promhttp.HandlerOpts{
		ErrorLog:          opts.ErrorLog,
		ErrorHandling:     promhttp.ContinueOnError,
		Timeout:           opts.Timeout,
		EnableOpenMetrics: opts.EnableOpenMetrics,
	})
	h.bufs.New = func() any { return &scrapeBuf{em: newEmitter()} }
	h.emitters.New = func() any { return newEmitter() }
	h.accepts = map[string]expfmt.Format{}
	h.codes = map[int]uint64{200: 0, 500: 0, 503: 0} // promhttp initialises these
	h.reqDesc = newMetricDesc("promhttp_metric_handler_requests_total", "Total number of scrapes by HTTP status code.", dto.MetricType_COUNTER, "code")
	h.flyDesc = newMetricDesc("promhttp_metric_handler_requests_in_flight", "Current number of scrapes being served.", dto.MetricType_GAUGE)
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(rsp http.ResponseWriter, req *http.Request) {
	h.inFlight.Add(1)
	code := h.serve(rsp, req)
	h.inFlight.Add(-1)
	h.codesMu.Lock()
	h.codes[code]++
	h.codesMu.Unlock()
}

// serve answers one scrape and returns its status code.
func (h *Handler) serve(rsp http.ResponseWriter, req *http.Request) int {
	if h.sem != nil {
		select {
		case h.sem <- struct{}{}:
			defer func() { <-h.sem }()
		default:
			http.Error(rsp, fmt.Sprintf("Limit of concurrent requests reached (%d), try again later.", h.opts.MaxRequestsInFlight),
				http.StatusServiceUnavailable)
			return http.StatusServiceUnavailable
		}
	}
	if req.URL != nil && req.URL.RawQuery != "" && len(req.URL.Query()["name[]"]) > 0 {
		return h.serveSlow(rsp, req)
	}
	format := h.negotiateFormat(req.Header)
	enc := negotiateEncoding(req.Header, h.offers)
	v, block := h.lookup(cacheKey{format, enc})
	if block.err != nil {
		h.logf("error encoding the view, serving through promhttp:", block.err)
		return h.serveSlow(rsp, req)
	}
	b := h.bufs.Get().(*scrapeBuf)
	defer h.putBuf(b)
	h.encodeLive(b, v, format, block.first)

	hdr := rsp.Header()
	hdr.Add("Vary", "Accept")
	hdr.Add("Vary", "Accept-Encoding")
	hdr.Set("Content-Type", string(format))
	var parts [3][]byte
	switch enc {
	case encGzip:
		hdr.Set("Content-Encoding", encGzip)
		parts = b.gzip(block)
	case encZstd:
		hdr.Set("Content-Encoding", encZstd)
		parts = b.zstd(block)
	default:
		parts = [3][]byte{b.prefix.Bytes(), block.body, b.suffix.Bytes()}
	}
	n := len(parts[0]) + len(parts[1]) + len(parts[2])
	hdr.Set("Content-Length", strconv.Itoa(n))
	if n <= maxKeptBuf {
		// One write, one syscall on the socket: three cost more than the copy.
		b.whole.Grow(n)
		for _, p := range parts {
			b.whole.Write(p)
		}
		parts = [3][]byte{b.whole.Bytes()}
	}
	for _, p := range parts {
		if _, err := rsp.Write(p); err != nil {
			break // the scraper went away; promhttp counts that as a 200 too
		}
	}
	return http.StatusOK
}

// negotiateFormat is expfmt.NegotiateAccept, remembered per Accept header: a scraper
// sends the same one every time, and parsing it was a tenth of a scrape.
func (h *Handler) negotiateFormat(hdr http.Header) expfmt.Format {
	accept := strings.Join(hdr.Values("Accept"), ",")
	h.mu.Lock()
	f, ok := h.accepts[accept]
	h.mu.Unlock()
	if ok {
		return f
	}
	f = expfmt.NegotiateAccept(hdr, h.formats...)
	h.mu.Lock()
	if len(h.accepts) >= maxAccepts {
		clear(h.accepts) // a scraper sending odd headers must not grow it
	}
	h.accepts[accept] = f
	h.mu.Unlock()
	return f
}

// maxAccepts bounds the remembered Accept headers.
const maxAccepts = 32

// serveSlow serves through promhttp, noting the status code it sends.
func (h *Handler) serveSlow(rsp http.ResponseWriter, req *http.Request) int {
	sr := &statusRecorder{ResponseWriter: rsp, code: http.StatusOK}
	h.slow.ServeHTTP(sr, req)
	return sr.code
}

type statusRecorder struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.code, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(p []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(p)
}

// scrapeCounts gathers the Handler's promhttp_metric_handler_* families for promhttp.
type scrapeCounts struct{ h *Handler }

func (s scrapeCounts) Gather() ([]*dto.MetricFamily, error) {
	e := newEmitter()
	s.h.collectScrapes(e)
	return e.families(), nil
}

// collectScrapes adds the promhttp_metric_handler_* families.
func (h *Handler) collectScrapes(e *emitter) {
	h.codesMu.Lock()
	for code, n := range h.codes {
		e.counter(h.reqDesc, float64(n), strconv.Itoa(code))
	}
	h.codesMu.Unlock()
	e.gauge(h.flyDesc, float64(h.inFlight.Load()))
}

func (h *Handler) logf(msg string, err error) {
	if h.opts.ErrorLog != nil {
		h.opts.ErrorLog.Println(msg, err)
	}
}

// lookup returns the latest view and its block for key, encoding it if no scrape of
// this view has yet; concurrent scrapes of one view wait for one encoding.
func (h *Handler) lookup(key cacheKey) (*join.View, *encoded) {
	h.mu.Lock()
	v := h.c.views.Latest()
	if v != h.view {
		// Scrapes still writing the last view's blocks keep them; nothing else does.
		h.view, h.cache = v, make(map[cacheKey]*encoded, 2)
	}
	h.mu.Unlock()
	return v, h.entry(v, key)
}

func (h *Handler) entry(v *join.View, key cacheKey) *encoded {
	h.mu.Lock()
	if h.view != v {
		// A newer view was published while this scrape encoded: serve the view it
		// started with, without caching a block nobody else will ask for.
		h.mu.Unlock()
		e := &encoded{ready: make(chan struct{})}
		h.fill(v, key, e)
		return e
	}
	e := h.cache[key]
	if e != nil {
		h.mu.Unlock()
		<-e.ready
		return e
	}
	e = &encoded{ready: make(chan struct{})}
	h.cache[key] = e
	h.mu.Unlock()
	h.fill(v, key, e)
	return e
}

func (h *Handler) fill(v *join.View, key cacheKey, e *encoded) {
	defer func() {
		if r := recover(); r != nil {
			e.err = fmt.Errorf("encoding the view panicked: %v", r)
		}
		close(e.ready)
	}()
	if key.enc == encZstd {
		base := h.entry(v, cacheKey{key.format, encIdentity})
		if base.err != nil {
			e.err = base.err
			return
		}
		e.body, e.first = zstdEncoder().EncodeAll(base.body, nil), base.first
		return
	}
	if key.enc == encGzip {
		base := h.entry(v, cacheKey{key.format, encIdentity})
		if base.err != nil {
			e.err = base.err
			return
		}
		var buf bytes.Buffer
		fw := blockWriters.Get().(*flate.Writer)
		fw.Reset(&buf)
		_, _ = fw.Write(base.body) // a bytes.Buffer does not fail
		_ = fw.Flush()
		blockWriters.Put(fw)
		e.body, e.crc, e.size, e.first = buf.Bytes(), crc32.ChecksumIEEE(base.body), len(base.body), base.first
		return
	}
	if h.onBuild != nil {
		h.onBuild()
	}
	// A pooled emitter, trimmed after use to what this view needed: memory a large view
	// needed goes back once the views are small again.
	em := h.emitters.Get().(*emitter)
	defer func() {
		em.reset()
		em.trim()
		h.emitters.Put(em)
	}()
	h.c.gatherView(em, v)
	mfs := em.families()
	if h.opts.Sampled != nil {
		sampled, err := h.opts.Sampled.Gather()
		if err != nil {
			h.logf("error gathering metrics:", err)
		}
		mfs = append(mfs, sampled...)
		sort.Slice(mfs, func(i, j int) bool { return mfs[i].GetName() < mfs[j].GetName() })
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, key.format)
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			e.err = fmt.Errorf("encode %s: %w", mf.GetName(), err)
			return
		}
	}
	e.body = slices.Clip(buf.Bytes())
	if len(mfs) > 0 {
		e.first = mfs[0].GetName()
	}
}

// Every flate.Writer holds about 650 KiB of hash tables whatever its level, so writers
// are pooled per package, not kept per scrape's scratch: a scratch buffer stays pooled
// for each scraper that ever scraped at the same time as another, and each kept its own
// writer. blockWriters compress cached blocks at gzip's default level, as promhttp
// does; partWriters the per-scrape parts too large to store (see storeBelow), at the
// fastest level.
var (
	blockWriters = sync.Pool{New: func() any {
		w, _ := flate.NewWriter(nil, flate.DefaultCompression)
		return w
	}}
	partWriters = sync.Pool{New: func() any {
		w, _ := flate.NewWriter(nil, flate.BestSpeed)
		return w
	}}
)

// scrapeBuf is one scrape's scratch: the per-scrape families before and after the
// cached block, their deflated forms, and the emitter the live vram_* families go into.
type scrapeBuf struct {
	em             *emitter
	prefix, suffix bytes.Buffer
	gzHead, gzTail bytes.Buffer
	whole          bytes.Buffer // the response, when small enough to write at once
}

// maxKeptBuf is the largest scratch buffer a pooled scrapeBuf keeps: the per-scrape
// parts are a few kilobytes, and one odd scrape must not pin more.
const maxKeptBuf = 256 << 10

func (h *Handler) putBuf(b *scrapeBuf) {
	for _, buf := range []*bytes.Buffer{&b.prefix, &b.suffix, &b.gzHead, &b.gzTail, &b.whole} {
		if buf.Cap() > maxKeptBuf {
			*buf = bytes.Buffer{}
		}
		buf.Reset()
	}
	b.em.reset()
	b.em.trim()
	h.bufs.Put(b)
}

// encodeLive encodes the per-scrape families into b.prefix (those sorting before the
// cached block's first family) and b.suffix.
func (h *Handler) encodeLive(b *scrapeBuf, v *join.View, format expfmt.Format, first string) {
	b.em.reset()
	h.c.gatherLive(b.em, v)
	h.collectScrapes(b.em)
	mfs := b.em.families()
	if h.opts.Others != nil {
		others, err := h.opts.Others.Gather()
		if err != nil {
			h.logf("error gathering metrics:", err)
		}
		mfs = append(mfs, others...)
		sort.Slice(mfs, func(i, j int) bool { return mfs[i].GetName() < mfs[j].GetName() })
	}
	if format.FormatType() == expfmt.TypeTextPlain {
		// What Prometheus asks for by default. The encoder would escape every family
		// into a copy first; the names here are all valid legacy names, which every
		// escaping scheme leaves as they are.
		for _, mf := range mfs {
			buf := &b.suffix
			if mf.GetName() < first {
				buf = &b.prefix
			}
			if _, err := expfmt.MetricFamilyToText(buf, mf); err != nil {
				h.logf("error encoding and sending metric family:", err)
			}
		}
		return
	}
	pre, suf := expfmt.NewEncoder(&b.prefix, format), expfmt.NewEncoder(&b.suffix, format)
	for _, mf := range mfs {
		enc := suf
		if mf.GetName() < first {
			enc = pre
		}
		if err := enc.Encode(mf); err != nil {
			h.logf("error encoding and sending metric family:", err)
		}
	}
	if c, ok := suf.(expfmt.Closer); ok {
		if err := c.Close(); err != nil { // OpenMetrics' "# EOF"
			h.logf("error encoding and sending metric family:", err)
		}
	}
}

// gzipHeader is RFC 1952's member header as gzip.Writer writes it without a name or
// modification time.
var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255}

// gzip returns one gzip member: header and deflated prefix, the cached block, deflated
// suffix and trailer.
func (b *scrapeBuf) gzip(block *encoded) [3][]byte {
	b.gzHead.Write(gzipHeader)
	if b.prefix.Len() > 0 {
		deflatePart(&b.gzHead, b.prefix.Bytes(), false)
	}
	deflatePart(&b.gzTail, b.suffix.Bytes(), true)
	// The daemon's per-scrape families all sort after the block's first, so there is
	// no prefix and the block's CRC just continues over the suffix.
	crc := block.crc
	if b.prefix.Len() > 0 {
		crc = crc32Combine(crc32.ChecksumIEEE(b.prefix.Bytes()), block.crc, int64(block.size))
	}
	crc = crc32.Update(crc, crc32.IEEETable, b.suffix.Bytes())
	var trailer [8]byte
	binary.LittleEndian.PutUint32(trailer[:4], crc)
	binary.LittleEndian.PutUint32(trailer[4:], uint32(b.prefix.Len()+block.size+b.suffix.Len()))
	b.gzTail.Write(trailer[:])
	return [3][]byte{b.gzHead.Bytes(), block.body, b.gzTail.Bytes()}
}

// zstd returns a zstd stream: a frame for the prefix (if any), the cached block's frame
// and one for the suffix.
func (b *scrapeBuf) zstd(block *encoded) [3][]byte {
	enc := zstdEncoder()
	var head []byte
	if b.prefix.Len() > 0 {
		head = enc.EncodeAll(b.prefix.Bytes(), b.gzHead.AvailableBuffer())
	}
	tail := enc.EncodeAll(b.suffix.Bytes(), b.gzTail.AvailableBuffer())
	return [3][]byte{head, block.body, tail}
}

// storeBelow is the size under which a per-scrape part is stored, not compressed: a
// few kilobytes of promhttp_* and push counters cost more to Huffman-code (≈ 5 µs, most
// of a scrape) than their bytes cost to send.
const storeBelow = 8 << 10

// deflatePart appends p to dst as deflate blocks ending at a byte boundary (a sync
// flush), the last one final if final; dst must be at a byte boundary too, as after the
// gzip header or the cached block.
func deflatePart(dst *bytes.Buffer, p []byte, final bool) {
	if len(p) < storeBelow {
		storeBlocks(dst, p, final)
		return
	}
	fw := partWriters.Get().(*flate.Writer)
	fw.Reset(dst)
	_, _ = fw.Write(p) // a bytes.Buffer does not fail
	if final {
		_ = fw.Close()
	} else {
		_ = fw.Flush()
	}
	fw.Reset(io.Discard) // the pool must not keep dst
	partWriters.Put(fw)
}

// storeBlocks appends p to dst as stored deflate blocks (RFC 1951 3.2.4), what a
// flate.Writer at NoCompression writes, without the writer's 650 KiB; dst must be at a
// byte boundary.
func storeBlocks(dst *bytes.Buffer, p []byte, final bool) {
	for {
		n := min(len(p), math.MaxUint16)
		var hdr [5]byte // BFINAL and BTYPE 00 padded to a byte, LEN, NLEN
		if final && n == len(p) {
			hdr[0] = 1
		}
		binary.LittleEndian.PutUint16(hdr[1:], uint16(n))
		binary.LittleEndian.PutUint16(hdr[3:], ^uint16(n))
		dst.Write(hdr[:])
		dst.Write(p[:n])
		if p = p[n:]; len(p) == 0 {
			return
		}
	}
}

// negotiateEncoding picks the content coding as promhttp does: the offer with the
// highest q in Accept-Encoding ("*" matches any), identity when none is acceptable.
// promhttp's own negotiation is internal to client_golang; TestNegotiateEncodingAsPromhttp
// holds the two together.
func negotiateEncoding(h http.Header, offers []string) string {
	if v := h.Values("Accept-Encoding"); len(v) == 1 && !strings.ContainsAny(v[0], ",;* ") {
		// One coding, no q: what Prometheus sends ("gzip").
		for _, o := range offers {
			if o == v[0] {
				return o
			}
		}
		return encIdentity
	}
	type spec struct {
		value string
		q     float64
	}
	var specs []spec
	for _, line := range h.Values("Accept-Encoding") {
		for _, s := range strings.Split(line, ",") {
			value, params, _ := strings.Cut(s, ";")
			value = strings.TrimSpace(value) // case-sensitive, as promhttp compares
			if value == "" {
				continue
			}
			q := 1.0
			for _, p := range strings.Split(params, ";") {
				k, val, ok := strings.Cut(strings.TrimSpace(p), "=")
				if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
					if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
						q = f
					}
				}
			}
			specs = append(specs, spec{value, q})
		}
	}
	// Offers outside, specs inside, strictly greater q: the same tie-breaks as promhttp
	// ("gzip, identity" is identity, the first offer).
	best, bestQ := encIdentity, -1.0
	for _, o := range offers {
		for _, s := range specs {
			if s.q > bestQ && (s.value == "*" || s.value == o) {
				best, bestQ = o, s.q
			}
		}
	}
	if bestQ == 0 {
		return encIdentity
	}
	return best
}

// crc32Combine returns the CRC-32 (IEEE) of A followed by B from the CRCs of both and
// the length of B, as zlib's crc32_combine, so a scrape need not checksum the cached
// block again: it applies len2 zero bytes to crc1 with squared GF(2) operator matrices.
func crc32Combine(crc1, crc2 uint32, len2 int64) uint32 {
	if len2 <= 0 {
		return crc1 ^ crc2
	}
	var even, odd [32]uint32
	odd[0] = crc32.IEEE // the operator for one zero bit
	row := uint32(1)
	for n := 1; n < 32; n++ {
		odd[n] = row
		row <<= 1
	}
	gf2Square(&even, &odd) // two zero bits
	gf2Square(&odd, &even) // four
	for {
		gf2Square(&even, &odd) // first pass: one zero byte
		if len2&1 != 0 {
			crc1 = gf2Times(&even, crc1)
		}
		if len2 >>= 1; len2 == 0 {
			break
		}
		gf2Square(&odd, &even)
		if len2&1 != 0 {
			crc1 = gf2Times(&odd, crc1)
		}
		if len2 >>= 1; len2 == 0 {
			break
		}
	}
	return crc1 ^ crc2
}

func gf2Times(mat *[32]uint32, vec uint32) uint32 {
	var sum uint32
	for i := 0; vec != 0; i, vec = i+1, vec>>1 {
		if vec&1 != 0 {
			sum ^= mat[i]
		}
	}
	return sum
}

func gf2Square(square, mat *[32]uint32) {
	for n := range square {
		square[n] = gf2Times(mat, mat[n])
	}
}
