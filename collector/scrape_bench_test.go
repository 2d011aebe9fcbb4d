package collector

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/join"
	"github.com/vram-exporter/vram_exporter/leak/trend"
	"github.com/vram-exporter/vram_exporter/nvml"
	"github.com/vram-exporter/vram_exporter/procinfo"
	"github.com/vram-exporter/vram_exporter/push"
)

// The scrape benchmarks serve /metrics as the daemon does (benchHandler: the handler,
// instrumented, next to a Go, process and build info Registry) to a discarding writer:
// 1 GPU × 1 process, and 8 GPUs × 64 processes that all push a torch pool and have
// trend results (≈ 12k series, ≈ 1.9 MB of text), each in identity and gzip, one
// scraper and 8 concurrent ones. Between two sample ticks every scrape sees the same
// view; "tick" publishes a new view before every scrape, the worst case (a scrape
// interval at or below --nvml.poll-interval).

func scrapeView(gpus, procs int, pushed bool) *join.View {
	v := &join.View{Time: now, NVML: nvml.Snapshot{Up: true, DriverVersion: "580", NVMLVersion: "13"}}
	for gi := range gpus {
		uuid := "GPU-" + strconv.Itoa(gi) + "-bench"
		v.GPUs = append(v.GPUs, join.GPU{GPU: nvml.GPU{Index: gi, UUID: uuid, Name: "NVIDIA H200", MemoryAPI: "v2",
			TotalBytes: 141 * GiB, UsedBytes: 80 * GiB, BAR1Valid: true}, HasTrend: true,
			Trend: trend.GPUResult{Growth: []trend.Growth{{Series: "used", Window: "short", Valid: true, BytesPerSecond: 12, Fit: 0.5}}}})
		for pi := range procs {
			pid := uint32(1000 + gi*procs + pi)
			used := uint64(1+pi) * GiB
			p := join.Process{PID: pid, UUID: uuid, GPU: strconv.Itoa(gi), HasNVML: true, UsedBytes: used,
				HasFacts: true, Facts: procinfo.Facts{PID: pid, Comm: "python3", Cmdline: "python3 serve.py --model m", RSSBytes: GiB, StartTime: now}}
			if pushed {
				p.Pushed = true
				p.Runtimes = []join.Runtime{{Name: "torch", Version: "2.11", Labels: map[string]string{"service": "s"}}}
				p.Pools = []push.Pool{{Name: "torch", Allocated: used / 2, Reserved: used * 3 / 4}}
				p.AllocatedBytes, p.ReservedBytes = used/2, used*3/4
				p.HasUnattributed, p.UnattributedBytes = true, int64(used/4)
				p.HasTrend = true
				p.Trend = trend.Result{Verdict: trend.Steady, Growth: []trend.Growth{
					{Series: "allocated", Window: "short", Valid: true, BytesPerSecond: 1, Fit: 0.1}, {Series: "reserved", Window: "short", Valid: true},
					{Series: "used", Window: "short", Valid: true}, {Series: "unattributed", Window: "short", Valid: true},
					{Series: "allocated", Window: "long", Valid: true}, {Series: "reserved", Window: "long", Valid: true},
					{Series: "used", Window: "long", Valid: true}, {Series: "unattributed", Window: "long", Valid: true},
				}}
				v.Senders = append(v.Senders, push.Sender{PID: pid, LastSeen: now})
			}
			v.Processes = append(v.Processes, p)
		}
	}
	return v
}

func benchRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGauge(prometheus.GaugeOpts{Name: "vram_exporter_build_info", Help: "Build.", ConstLabels: prometheus.Labels{"version": "bench"}}))
	return reg
}

var benchSizes = []struct {
	name        string
	gpus, procs int
}{{"1x1", 1, 1}, {"8x64", 8, 64}}

var benchCodings = []struct{ name, accept string }{{"identity", ""}, {"gzip", "gzip"}}

func scrapeRequest(accept string) *http.Request {
	req := httptest.NewRequest("GET", "/metrics", nil)
	if accept != "" {
		req.Header.Set("Accept-Encoding", accept)
	}
	return req
}

func BenchmarkServe(b *testing.B) {
	for _, sz := range benchSizes {
		for _, cd := range benchCodings {
			for _, tick := range []bool{false, true} {
				name := sz.name + "/" + cd.name
				if tick {
					name += "/tick"
				}
				b.Run(name, func(b *testing.B) {
					views := newSwapView(scrapeView(sz.gpus, sz.procs, true))
					c := New(views, staticPush{S: fixturePushStats()}, zap.NewNop()).WithNow(func() time.Time { return now })
					h := benchHandler(c, benchRegistry())
					req := scrapeRequest(cd.accept)
					w := &discardWriter{header: http.Header{}}
					next := views.Latest()
					b.ReportAllocs()
					for b.Loop() {
						if tick {
							cp := *next // a new view with the same content, as a tick publishes
							views.p.Store(&cp)
						}
						w.n = 0
						h.ServeHTTP(w, req)
						if w.code != 200 || w.n == 0 {
							b.Fatal(w.code, w.n)
						}
					}
					b.ReportMetric(float64(w.n), "resp-bytes")
				})
			}
		}
	}
}

// BenchmarkServeConcurrent is 8 scrapers at once on one view.
func BenchmarkServeConcurrent(b *testing.B) {
	for _, sz := range benchSizes {
		for _, cd := range benchCodings {
			b.Run(sz.name+"/"+cd.name, func(b *testing.B) {
				views := newSwapView(scrapeView(sz.gpus, sz.procs, true))
				c := New(views, staticPush{S: fixturePushStats()}, zap.NewNop()).WithNow(func() time.Time { return now })
				h := benchHandler(c, benchRegistry())
				b.SetParallelism(max(1, 8/runtimeProcs()))
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					req := scrapeRequest(cd.accept)
					w := &discardWriter{header: http.Header{}}
					for pb.Next() {
						w.header = http.Header{}
						h.ServeHTTP(w, req)
						if w.code != 200 && w.code != http.StatusServiceUnavailable {
							b.Error(w.code)
						}
					}
				})
			})
		}
	}
}

// BenchmarkServeFromMemory is the floor: the same number of bytes written from memory
// by a handler that does nothing else.
func BenchmarkServeFromMemory(b *testing.B) {
	for _, sz := range benchSizes {
		for _, cd := range benchCodings {
			b.Run(sz.name+"/"+cd.name, func(b *testing.B) {
				views := newSwapView(scrapeView(sz.gpus, sz.procs, true))
				c := New(views, staticPush{S: fixturePushStats()}, zap.NewNop())
				reg := benchRegistry()
				rec := httptest.NewRecorder()
				promhttp.HandlerForTransactional(NewTransactional(c, reg), promhttp.HandlerOpts{}).ServeHTTP(rec, scrapeRequest(cd.accept))
				body := rec.Body.Bytes()
				hdr := rec.Header().Clone()
				h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					for k, v := range hdr {
						w.Header()[k] = v
					}
					w.Header().Set("Content-Length", strconv.Itoa(len(body)))
					_, _ = w.Write(body)
				})
				req := scrapeRequest(cd.accept)
				w := &discardWriter{header: http.Header{}}
				b.ReportAllocs()
				for b.Loop() {
					w.header = http.Header{}
					h.ServeHTTP(w, req)
				}
				b.ReportMetric(float64(len(body)), "resp-bytes")
			})
		}
	}
}
