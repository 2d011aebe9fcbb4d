//go:build cgo

// Package demo simulates a GPU node for demo mode: several H200-sized GPUs served by
// the fake NVML (nvmltest), processes on them whose allocator stats are pushed into the
// same push.Store real clients feed, and procfs-like facts for their PIDs. Everything
// downstream — the join, the trend engine, the collectors, the JSON API — is the real
// code; the demo only replaces the three sources.
//
// The simulated processes cover the cases the product exists for (see Scenario): a
// healthy server whose cache warms up and plateaus, a leaking server, a process whose
// memory outside the allocator grows, three workers of one service each holding the
// same model, a process that exits and restarts with a new PID, and a GPU heading for
// exhaustion (a fast leak that ends in an OOM and a restart), plus a notebook that
// pushes nothing (NVML's view only).
//
// The node is deterministic for a seed: its state is stepped once per simulated second,
// every random draw comes from per-process generators seeded from the seed, and no
// wall time is read. Two Nodes with the same Config advanced to the same instants serve
// identical NVML specs and push identical messages.
package demo

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/vram-exporter/vram_exporter/clock"
	"github.com/vram-exporter/vram_exporter/nvml/nvmltest"
	"github.com/vram-exporter/vram_exporter/procinfo"
	"github.com/vram-exporter/vram_exporter/push"
)

const (
	// DriverReservedBytes is what the simulated driver keeps for itself on an H200.
	driverReservedBytes = 577 * MiB

	// PushInterval is how often a simulated client pushes (the Python client's default).
	PushInterval = 5 * time.Second

	// connIDBase keeps the demo's connection IDs far from the push server's, which count
	// up from 1, so a real client on the demo daemon's socket never collides with them.
	connIDBase = 1 << 48

	// pushWindow: while catching up many simulated seconds at once (a suspended laptop),
	// messages are built only for the last seconds; older ones would be overwritten
	// before anyone read them. Exits and restarts are still applied in order.
	pushWindow = 60

	// oomGrace is how long a process keeps running after its first OOM.
	oomGrace = 60
)

// Store is where simulated clients push: the daemon's *push.Store.
type Store interface {
	Update(connID uint64, connectedAt time.Time, cred push.Cred, msg push.Message) error
	Remove(connID uint64)
}

// Scenario names what a simulated process demonstrates.
type Scenario string

// The scenarios.
const (
	// Healthy: a server whose allocator cache warms up in steps and plateaus; the
	// allocated floor is flat under a request sawtooth. Verdict: steady after warm-up.
	Healthy Scenario = "healthy"
	// Leaking: the allocated floor rises 30–60 MiB/min. Verdict: leak.
	Leaking Scenario = "leak"
	// UnattributedGrowth: used rises while reserved is flat: NCCL communicators created
	// per request outside the allocator. Verdict: unattributed_growth.
	UnattributedGrowth Scenario = "unattributed_growth"
	// Duplicated: one of three workers of one service on one GPU, each holding its own
	// ~18 GiB copy of the model. Verdict: steady; the waste is in the labels.
	Duplicated Scenario = "duplicated"
	// Restarting: a batch worker recycled every 20 simulated minutes; it comes back 15 s
	// later with a new PID, and its push connection is removed when it exits.
	Restarting Scenario = "restart"
	// Exhaustion: a fast leak (1.3–1.5 GiB/min) on a GPU shared with the duplicated
	// workers: vram_gpu_exhaustion_seconds appears within minutes; when the GPU is full
	// (about an hour in) the allocator retries, requests OOM for a minute, and the
	// process is restarted with a new PID. (Any process that fills its GPU does the same.)
	Exhaustion Scenario = "exhaustion"
	// NoPush: a notebook that pushes no allocator stats: only NVML's view.
	NoPush Scenario = "no_push"
	// The diagnosis (docs/triage.md): one process per OOM kind, each failing a request
	// every 10 minutes with figures its kind is classified from; a JAX process holding
	// XLA's preallocated pool (not a torch cache: never told to empty_cache()); a
	// TensorRT engine with four execution contexts of 1.2 GiB each.
	OOMShortage      Scenario = "oom_shortage"
	OOMFragmentation Scenario = "oom_fragmentation"
	OOMPeak          Scenario = "oom_peak"
	JAXPreallocated  Scenario = "jax_preallocated"
	TensorRTContexts Scenario = "tensorrt_contexts"
)

// oomEvery is how often an OOM scenario fails a request; oomFirst its age at the first,
// after the daemon's floor warm-up.
const (
	oomEvery = 600
	oomFirst = 150
)

// Process describes a live simulated process (for tests, logs and docs).
type Process struct {
	PID      uint32
	GPU      int
	UUID     string
	Scenario Scenario
	Labels   map[string]string // service, model; nil for NoPush
	Comm     string
	Pushes   bool
}

// template is the fixed description of one simulated process, over its restarts.
type template struct {
	scenario       Scenario
	slot           int    // preferred GPU index, modulo the GPU count
	pid            uint32 // PID of the first generation
	service, model string
	comm, cmdline  string
	startAt        int64 // simulated second of the first start (negative: before the demo)

	weights     float64 // allocated floor at start, bytes (weights, static buffers)
	kv          float64 // a nested vllm.kv_cache pool of this size (allocated from the start)
	act         float64 // largest per-request activation, bytes
	cacheExtra  float64 // cache the allocator keeps above floor+act after warm-up
	leak        float64 // allocated-floor growth, bytes/s
	ctx0, ctx1  float64 // unattributed bytes at start and after warm-up (CUDA context, cuBLAS…)
	unattrRate  float64 // unattributed growth after warm-up, bytes/s, in unattrStep steps
	unattrStep  float64
	lifetime    int64 // seconds until a planned exit (0: never)
	restartWait int64 // seconds between an exit and the next start
	limit       float64
	rss         float64
	push        bool
	pod         string // pod UID, "" outside Kubernetes
	container   bool

	runtime   string            // "" is torch
	allocator map[string]string // pushed allocator settings
	prealloc  float64           // reserved from the start (JAX's preallocated pool)
	contexts  int               // TensorRT execution contexts of ctxBytes each
	ctxBytes  float64
	phases    []string // reporter.phase names, each peaking at a larger share of act
}

// proc is one generation of a template.
type proc struct {
	t   *template
	rng *rand.Rand
	gpu int

	gen        int
	pid        uint32
	alive      bool
	startSec   int64
	restartAt  int64 // when not alive: the second of the next start
	dieAt      int64 // when alive: the second of an exit already decided (OOM); 0 none
	connID     uint64
	connected  time.Time
	labels     map[string]string
	facts      procinfo.Facts
	container  string
	allocated  float64
	kvUsed     float64
	reserved   float64
	peak       float64
	unattr     float64
	used       uint64
	retries    uint64
	ooms       uint64
	dropped    uint64
	inactSplit float64
	inFlight   uint64 // requests in flight at the sample (the torch servers count theirs)
	oomFloor   float64
	oomSeq     uint64
	oomEvents  []push.OOMEvent // the newest push.MaxOOMEvents
}

// Node is a simulated GPU node. Its methods are safe for concurrent use.
type Node struct {
	cfg   Config
	epoch time.Time // simulated second 0
	boot  time.Time // simulated boot time, for start ticks
	scale float64
	uuids []string
	nv    *nvmltest.Server

	mu       sync.Mutex
	sec      int64 // last simulated second stepped; -1 before the first
	procs    []*proc
	byPID    map[uint32]*proc
	nextConn uint64
	seedRNG  *rand.Rand // container IDs and pod UIDs
}

// New returns a node whose simulated second 0 is epoch. Nothing runs until AdvanceTo or
// Run; NVML serves the GPUs with no processes until then.
func New(cfg Config, epoch time.Time) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := &Node{
		cfg:      cfg,
		epoch:    epoch,
		boot:     epoch.Add(-26*time.Hour - 17*time.Minute),
		scale:    math.Min(1, float64(cfg.GPUMemoryBytes)/H200Bytes),
		sec:      -1,
		byPID:    map[uint32]*proc{},
		nextConn: connIDBase,
		seedRNG:  rand.New(rand.NewPCG(uint64(cfg.Seed), 0x5eed)),
	}
	for range cfg.GPUs {
		n.uuids = append(n.uuids, "GPU-"+n.hex(8)+"-"+n.hex(4)+"-"+n.hex(4)+"-"+n.hex(4)+"-"+n.hex(12))
	}
	for i, t := range n.templates() {
		p := &proc{
			t:         t,
			gpu:       t.slot % cfg.GPUs,
			rng:       rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(i+1))),
			restartAt: t.startAt,
		}
		n.procs = append(n.procs, p)
	}
	specs := make([]nvmltest.GPUSpec, cfg.GPUs)
	for i := range specs {
		specs[i] = n.gpuSpec(i, nil, 0)
	}
	n.nv = nvmltest.NewServer(specs...)
	// The simulated driver has no MPS process list: one NOT_SUPPORTED per GPU, counted
	// once by the poller, so vram_nvml_errors_total has something to show.
	n.nv.Fail("GetMPSComputeRunningProcesses", "", gonvml.ERROR_NOT_SUPPORTED)
	return n, nil
}

func (n *Node) hex(digits int) string {
	const h = "0123456789abcdef"
	b := make([]byte, digits)
	for i := range b {
		b[i] = h[n.seedRNG.IntN(16)]
	}
	return string(b)
}

// templates lists the simulated processes. Sizes are for an H200 and scaled down for a
// smaller GPU; rates drawn from the seed vary within the documented ranges.
func (n *Node) templates() []*template {
	r := rand.New(rand.NewPCG(uint64(n.cfg.Seed), 0x7e3))
	f := n.scale
	mib := func(x float64) float64 { return x * MiB * f }
	gib := func(x float64) float64 { return x * GiB * f }
	perMin := func(x float64) float64 { return x * MiB * f / 60 }
	between := func(a, b float64) float64 { return a + (b-a)*r.Float64() }
	total := float64(n.cfg.GPUMemoryBytes)

	chatPod, embedPod := n.podUID(), n.podUID()
	ts := []*template{
		{
			scenario: Healthy, slot: 0, pid: 2101, service: "chat", model: "llama-3.1-8b-instruct",
			comm: "vllm", cmdline: "vllm serve meta-llama/Llama-3.1-8B-Instruct --gpu-memory-utilization 0.45",
			startAt: 0, weights: gib(15.0), kv: gib(24), act: gib(1.2), cacheExtra: mib(700),
			ctx0: mib(520), ctx1: mib(690), limit: 0.45 * total, rss: gib(7.5), push: true, pod: chatPod, container: true,
		},
		{
			scenario: NoPush, slot: 0, pid: 2750, comm: "python3",
			cmdline: "python3 -m ipykernel_launcher -f /home/alice/.local/share/jupyter/runtime/kernel-3f9c.json",
			startAt: -2 * 3600, weights: gib(5.6), act: mib(300), cacheExtra: mib(200),
			ctx0: mib(520), ctx1: mib(600), rss: gib(3.1),
		},
		{
			scenario: Leaking, slot: 1, pid: 3101, service: "ranker", model: "bge-reranker-large",
			comm: "python3", cmdline: "python3 -m ts.model_service_worker --sock-type unix --sock-name /home/model-server/tmp/.ts.sock.9000",
			startAt: 5, weights: gib(1.1), act: mib(600), cacheExtra: mib(400),
			leak: perMin(between(30, 60)), ctx0: mib(520), ctx1: mib(650), rss: gib(2.4), push: true, pod: n.podUID(), container: true,
		},
		{
			scenario: UnattributedGrowth, slot: 3, pid: 3301, service: "summarize", model: "mixtral-8x7b-instruct",
			comm: "python3", cmdline: "python3 summarize_server.py --model mistralai/Mixtral-8x7B-Instruct-v0.1 --tp 1",
			startAt: 25, weights: gib(47), act: gib(2.5), cacheExtra: gib(1),
			ctx0: mib(520), ctx1: mib(760), unattrRate: perMin(between(18, 30)), unattrStep: mib(6),
			rss: gib(11), push: true, pod: n.podUID(), container: true,
		},
		{
			scenario: Restarting, slot: 3, pid: 12001, service: "ocr", model: "trocr-large-printed",
			comm: "python3", cmdline: "python3 ocr_batch.py --model microsoft/trocr-large-printed --max-requests 5000",
			startAt: 10, weights: gib(2.3), act: mib(900), cacheExtra: mib(500),
			ctx0: mib(520), ctx1: mib(640), lifetime: 20 * 60, restartWait: 15,
			rss: gib(3.3), push: true, pod: n.podUID(), container: true,
		},
		{
			scenario: Exhaustion, slot: 2, pid: 22001, service: "asr", model: "whisper-large-v3",
			comm: "python3", cmdline: "python3 serve_asr.py --model openai/whisper-large-v3 --batch-size 32",
			startAt: 20, weights: gib(5.5), act: mib(1500), cacheExtra: mib(600),
			leak: perMin(between(1.3, 1.5) * 1024), ctx0: mib(520), ctx1: mib(700), restartWait: 30,
			rss: gib(4.2), push: true, pod: n.podUID(), container: true,
		},
	}
	for w := range 3 {
		ts = append(ts, &template{
			scenario: Duplicated, slot: 2, pid: uint32(4101 + w), service: "embed", model: "e5-mistral-7b-instruct",
			comm: "python3", cmdline: fmt.Sprintf("python3 -m bentoml serve service:Embedder --worker-id %d", w+1),
			// A large cache each (dynamic batch shapes): when GPU 2 nears exhaustion its
			// free memory is less than what these caches could hand back.
			startAt: int64(15 + w), weights: gib(14.2 + 0.05*float64(w)), act: mib(1800), cacheExtra: gib(4),
			ctx0: mib(520), ctx1: mib(700), rss: gib(6.1), push: true, pod: embedPod, container: true,
		})
	}
	ts = append(ts,
		&template{
			scenario: JAXPreallocated, slot: 1, pid: 6101, service: "forecast", model: "timesfm-1.0-200m",
			comm: "python3", cmdline: "python3 serve_forecast.py --platform gpu", startAt: 12,
			weights: gib(6.5), act: mib(400), ctx0: mib(520), ctx1: mib(600), rss: gib(3.8), push: true,
			pod: n.podUID(), container: true, runtime: "jax", prealloc: 0.3 * total,
			allocator: map[string]string{"preallocate": "true", "mem_fraction": "0.3", "allocator": "default"},
		},
		&template{
			scenario: TensorRTContexts, slot: 1, pid: 6201, service: "detect", model: "yolov8x-trt",
			comm: "tritonserver", cmdline: "tritonserver --model-repository=/models", startAt: 8,
			weights: gib(2.1), contexts: 4, ctxBytes: gib(1.2), ctx0: mib(600), ctx1: mib(700), rss: gib(2.2), push: true,
			pod: n.podUID(), container: true, runtime: "tensorrt", allocator: map[string]string{"allocation_strategy": "STATIC"},
		},
		&template{
			scenario: OOMShortage, slot: 0, pid: 7101, service: "caption", model: "blip2-opt-2.7b",
			comm: "python3", cmdline: "python3 caption_server.py --max-batch 64", startAt: 6,
			weights: gib(3), act: mib(500), cacheExtra: mib(300), ctx0: mib(520), ctx1: mib(640), rss: gib(2.6), push: true,
			pod: n.podUID(), container: true,
		},
		&template{
			scenario: OOMFragmentation, slot: 0, pid: 7201, service: "translate", model: "nllb-200-1.3b",
			comm: "python3", cmdline: "python3 translate_server.py --dynamic-shapes", startAt: 7,
			weights: gib(2.5), act: mib(700), cacheExtra: gib(1.5), ctx0: mib(520), ctx1: mib(640), rss: gib(2.4), push: true,
			pod: n.podUID(), container: true, allocator: map[string]string{"backend": "native"},
		},
		&template{
			scenario: OOMPeak, slot: 0, pid: 7301, service: "vision", model: "sam-vit-h",
			comm: "python3", cmdline: "python3 segment_server.py --workers 8", startAt: 9,
			weights: gib(1.5), act: mib(900), cacheExtra: mib(300), ctx0: mib(520), ctx1: mib(640), rss: gib(2.9), push: true,
			pod: n.podUID(), container: true, allocator: map[string]string{"expandable_segments": "True"},
			phases: []string{"decode_image", "encode", "postprocess"},
		},
	)
	// More GPUs than scenarios need: healthy replicas of the chat server.
	for g := 4; g < n.cfg.GPUs; g++ {
		c := *ts[0]
		c.slot, c.pid, c.startAt, c.pod = g, uint32(5001+10*(g-4)), int64(30+g), n.podUID()
		ts = append(ts, &c)
	}
	return ts
}

func (n *Node) podUID() string {
	return n.hex(8) + "-" + n.hex(4) + "-" + n.hex(4) + "-" + n.hex(4) + "-" + n.hex(12)
}

// NVML returns the simulated NVML: pass it wherever a gonvml.Interface is wanted.
func (n *Node) NVML() *nvmltest.Server { return n.nv }

// UUIDs returns the GPU UUIDs by index.
func (n *Node) UUIDs() []string { return slices.Clone(n.uuids) }

// Facts implements the daemon's process-facts reader for the simulated PIDs;
// procinfo.ErrNotFound for any other PID (and for a process that exited).
func (n *Node) Facts(pid uint32) (procinfo.Facts, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.byPID[pid]
	if p == nil {
		return procinfo.Facts{}, procinfo.ErrNotFound
	}
	return p.facts, nil
}

// Processes lists the live simulated processes, by GPU then PID.
func (n *Node) Processes() []Process {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []Process
	for _, p := range n.procs {
		if !p.alive {
			continue
		}
		out = append(out, Process{
			PID: p.pid, GPU: p.gpu, UUID: n.uuids[p.gpu], Scenario: p.t.scenario,
			Labels: p.labels, Comm: p.t.comm, Pushes: p.t.push,
		})
	}
	slices.SortFunc(out, func(a, b Process) int {
		if a.GPU != b.GPU {
			return a.GPU - b.GPU
		}
		return int(a.PID) - int(b.PID)
	})
	return out
}

// Run steps the node every simulated second of clk (a clock.Scaled in the daemon) until
// ctx is done, then removes its push connections.
func (n *Node) Run(ctx context.Context, clk clock.Clock, store Store) {
	t := clk.NewTicker(time.Second)
	defer t.Stop()
	n.AdvanceTo(clk.Now(), store)
	for {
		select {
		case <-ctx.Done():
			n.disconnectAll(store)
			return
		case <-t.C():
			n.AdvanceTo(clk.Now(), store)
		}
	}
}

// AdvanceTo steps every whole simulated second from the last one stepped up to now,
// pushes the messages that fall due into store, and publishes the result to NVML.
// Calling it with a time already stepped does nothing.
func (n *Node) AdvanceTo(now time.Time, store Store) {
	target := int64(now.Sub(n.epoch) / time.Second)
	n.mu.Lock()
	defer n.mu.Unlock()
	if target <= n.sec {
		return
	}
	for s := n.sec + 1; s <= target; s++ {
		n.step(s, s > target-pushWindow, store)
	}
	n.sec = target
	n.publish()
}

func (n *Node) disconnectAll(store Store) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range n.procs {
		if p.alive && p.connID != 0 {
			store.Remove(p.connID)
			p.connID = 0
		}
	}
}

func (n *Node) at(s int64) time.Time { return n.epoch.Add(time.Duration(s) * time.Second) }

// step advances every process by one simulated second s.
func (n *Node) step(s int64, build bool, store Store) {
	for _, p := range n.procs {
		if !p.alive {
			if s != p.restartAt && (s != 0 || p.restartAt > 0) {
				continue
			}
			n.start(p, s)
		}
		if p.dieAt != 0 && s >= p.dieAt || p.t.lifetime > 0 && s-p.startSec >= p.t.lifetime {
			n.exit(p, s, store)
			continue
		}
		n.simulate(p, s)
		if p.t.push && (s-p.startSec)%int64(PushInterval/time.Second) == 2 && build {
			n.push(p, s, store)
		}
	}
}

// start begins a new generation of p at second s (or, for a process that started
// before the demo, as if it had started at its startAt).
func (n *Node) start(p *proc, s int64) {
	t := p.t
	startSec := s
	if t.startAt < 0 && p.gen == 0 {
		startSec = t.startAt
	}
	*p = proc{t: t, rng: p.rng, gpu: p.gpu, gen: p.gen, alive: true, startSec: startSec}
	p.pid = t.pid
	if p.gen > 0 {
		p.pid = t.pid + uint32((97*p.gen)%9000)
	}
	for n.byPID[p.pid] != nil { // the kernel never hands out a live PID
		p.pid++
	}
	if t.service != "" {
		p.labels = map[string]string{"service": t.service, "model": t.model}
	}
	if t.container {
		p.container = "containerd://" + n.hex(64)
	}
	if t.push {
		n.nextConn++
		p.connID = n.nextConn
		p.connected = n.at(max(startSec, 0))
	}
	start := n.at(startSec)
	ticks := uint64(start.Sub(n.boot) / (10 * time.Millisecond))
	p.facts = procinfo.Facts{
		PID: p.pid, Comm: t.comm, Cmdline: t.cmdline, StartTicks: ticks,
		StartTime:   n.boot.Add(time.Duration(ticks) * 10 * time.Millisecond),
		ContainerID: p.container, PodUID: t.pod, RSSBytes: uint64(t.rss),
	}
	n.byPID[p.pid] = p
}

func (n *Node) exit(p *proc, s int64, store Store) {
	if p.connID != 0 {
		store.Remove(p.connID)
	}
	delete(n.byPID, p.pid)
	p.alive, p.connID, p.dieAt = false, 0, 0
	wait := p.t.restartWait
	if wait <= 0 {
		wait = 30
	}
	p.restartAt = s + wait
	p.gen++
}

// warm is the fraction of the warm-up (new shapes, CUDA graphs, cuBLAS workspaces) done
// at age seconds: steps at 20 s, 50 s, 90 s and 150 s, then a plateau.
func warm(age int64) float64 {
	switch {
	case age < 20:
		return 0.35
	case age < 50:
		return 0.6
	case age < 90:
		return 0.8
	case age < 150:
		return 0.92
	}
	return 1
}

const block = 2 * MiB // the allocator's rounding

func roundUp(x float64) float64 { return math.Ceil(x/block) * block }

// simulate computes p's allocator and driver figures at second s.
func (n *Node) simulate(p *proc, s int64) {
	t := p.t
	age := s - p.startSec
	w := warm(age)
	floor := t.weights + t.kv + t.leak*float64(age) + float64(t.contexts)*t.ctxBytes
	if p.dieAt != 0 {
		floor = p.oomFloor // allocations fail now: the leak stops growing
	}
	act := 0.0
	if p.rng.Float64() >= 0.45 { // between requests 45% of the time: the floor shows
		act = t.act * (0.15 + 0.85*p.rng.Float64())
	}
	p.allocated = floor + act
	p.inFlight = 0
	if act > 0 {
		p.inFlight = 1
	}
	if t.kv > 0 {
		p.kvUsed = t.kv * (0.2 + 0.5*p.rng.Float64())
	}
	// The allocator only grows its cache (no empty_cache): the warm-up steps, and
	// whatever a request needed beyond it.
	p.reserved = max(p.reserved, roundUp(floor+w*(t.act+t.cacheExtra)), roundUp(p.allocated), roundUp(t.prealloc))
	p.unattr = t.ctx0 + (t.ctx1-t.ctx0)*w
	if t.unattrRate > 0 && age > 150 {
		grown := t.unattrRate * float64(age-150)
		p.unattr += math.Floor(grown/t.unattrStep) * t.unattrStep
	}
	p.inactSplit = math.Min(p.reserved-p.allocated, float64(p.rng.IntN(48))*MiB)

	// The GPU's room for this process: total minus the driver's and the others' memory.
	room := float64(n.cfg.GPUMemoryBytes) - driverReservedBytes*n.scale
	for _, o := range n.procs {
		if o != p && o.alive && o.gpu == p.gpu {
			room -= float64(o.used)
		}
	}
	if p.reserved+p.unattr > room {
		// cudaMalloc failed: the allocator frees its cache and retries…
		p.retries++
		p.reserved = roundUp(p.allocated)
		if p.reserved+p.unattr > room {
			// …and still fails: torch.OutOfMemoryError. The server answers errors for a
			// minute (OOMs counting up), then its liveness probe fails and it is
			// restarted with a new PID.
			p.ooms++
			if p.dieAt == 0 {
				p.dieAt, p.oomFloor = s+oomGrace, floor
			}
			p.allocated = floor
			p.reserved = math.Max(roundUp(floor), math.Floor((room-p.unattr)/block)*block)
		}
	}
	p.peak = max(p.peak, p.allocated)
	p.used = uint64(roundUp(p.reserved + p.unattr))
	if age >= oomFirst && (age-oomFirst)%oomEvery == 0 {
		n.failRequest(p, room)
	}
	if t.push && p.rng.Float64() < 0.0005 { // a rare dropped sample under load
		p.dropped++
	}
	p.facts.RSSBytes = uint64(t.rss * (1 + 0.02*p.rng.Float64()))
}

// failRequest makes an OOM scenario fail one request with the figures of its kind, as
// torch's OOM observer would report them (docs/triage.md, "OOM kinds"):
//   - shortage: the request is the free memory plus the whole cache plus a bit, and the
//     demand stays under twice the floor;
//   - fragmentation: the request is 80% of free plus cache, the largest free block a
//     quarter of it;
//   - peak: four concurrent requests' activations at once, far above the floor.
func (n *Node) failRequest(p *proc, room float64) {
	t := p.t
	cached := p.reserved - p.allocated
	free := math.Max(0, math.Min(128*MiB*n.scale, room-p.reserved-p.unattr))
	ev := push.OOMEvent{Source: push.OOMSourceObserver, DeviceFree: set(free), DeviceLimit: set(float64(n.cfg.GPUMemoryBytes)),
		Allocated: set(p.allocated), Reserved: set(p.reserved), InactiveSplit: set(p.inactSplit)}
	switch t.scenario {
	case OOMShortage:
		ev.Requested = set(roundUp(free + cached + t.act))
	case OOMFragmentation:
		req := roundUp(0.8 * (free + cached))
		ev.Requested, ev.LargestFreeBlock = set(req), set(roundUp(req/4))
	case OOMPeak:
		ev.Requested = set(roundUp(free + cached + 4*t.act + t.weights))
	default:
		return
	}
	p.ooms++
	p.oomSeq++
	ev.Seq = p.oomSeq
	p.oomEvents = append(p.oomEvents, ev)
	if len(p.oomEvents) > push.MaxOOMEvents {
		p.oomEvents = p.oomEvents[1:]
	}
}

func (n *Node) push(p *proc, s int64, store Store) {
	if p.t.runtime == "jax" || p.t.runtime == "tensorrt" {
		n.pushOther(p, store)
		return
	}
	pools := []push.Pool{{
		Name: "torch", Allocated: uint64(p.allocated), Reserved: uint64(p.reserved),
		PeakAllocated: set(p.peak), Active: set(roundUp(p.allocated)), InactiveSplit: set(p.inactSplit),
		AllocRetries: set(float64(p.retries)), OOMs: set(float64(p.ooms)),
	}}
	if p.t.limit > 0 {
		pools[0].Limit = set(p.t.limit)
	}
	if p.t.kv > 0 {
		pools = append(pools, push.Pool{Name: "vllm.kv_cache", Parent: "torch", Allocated: uint64(p.kvUsed), Reserved: uint64(p.t.kv)})
	}
	dev := push.Device{UUID: n.uuids[p.gpu], Pools: pools}
	for i, ph := range p.t.phases {
		// The middle phase (the model's forward pass) peaks highest. No random draw here:
		// messages are built only for the last seconds of a catch-up (pushWindow).
		share := [...]float64{0.35, 1, 0.2}[i%3]
		dev.PhasePeaks = append(dev.PhasePeaks, push.PhasePeak{Phase: ph, PeakAllocated: uint64(p.t.weights + share*p.t.act)})
	}
	if p.oomSeq > 0 {
		dev.OOMSeq, dev.OOMEvents = set(float64(p.oomSeq)), slices.Clone(p.oomEvents)
	}
	msg := push.Message{
		V: push.Version, Runtime: "torch", RuntimeVersion: "2.7.1+cu126", Labels: p.labels, ClientDropped: p.dropped,
		Devices: []push.Device{dev}, Allocator: p.t.allocator,
		// The torch servers count their requests (reporter.request()); the JAX and
		// TensorRT ones do not, as a client that has not opted in.
		RequestsInFlight: push.Optional{Value: p.inFlight, Set: true},
	}
	// A refusal (the store's process bound) is what a real client would see too; the
	// demo keeps going.
	_ = store.Update(p.connID, p.connected, push.Cred{PID: p.pid, UID: 1000, GID: 1000}, msg)
}

// pushOther pushes what a JAX client (one pool, XLA's preallocated reserve) or the
// TensorRT tracker (weights and one pool per execution context) would.
func (n *Node) pushOther(p *proc, store Store) {
	var pools []push.Pool
	rt, version := p.t.runtime, "0.4.35"
	if rt == "jax" {
		pools = []push.Pool{{Name: "jax", Allocated: uint64(p.allocated), Reserved: uint64(p.reserved),
			PeakAllocated: set(p.peak), Limit: set(p.t.prealloc)}}
	} else {
		version = "10.8.0.43"
		pools = []push.Pool{{Name: "trt.weights", Allocated: uint64(p.t.weights), Reserved: uint64(p.t.weights)}}
		for i := range p.t.contexts {
			pools = append(pools, push.Pool{Name: fmt.Sprintf("trt.context.%d", i), Allocated: uint64(p.t.ctxBytes), Reserved: uint64(p.t.ctxBytes)})
		}
	}
	dev := push.Device{UUID: n.uuids[p.gpu], Pools: pools}
	if rt == "tensorrt" {
		// Each context has its own activation memory (the static strategy): four times
		// what one buffer shared by contexts that never run at once would hold. Part of
		// the weights stream (a budget below the streamable size).
		dev.TRTEngines = []push.TRTEngine{{Engine: "trt.weights", Contexts: uint64(p.t.contexts),
			ContextBytes: set(p.t.ctxBytes), HeldBytes: set(float64(p.t.contexts) * p.t.ctxBytes), WeightsBytes: set(p.t.weights),
			StreamableBytes: set(p.t.weights), StreamingBudgetBytes: set(0.75 * p.t.weights)}}
	}
	msg := push.Message{V: push.Version, Runtime: rt, RuntimeVersion: version, Labels: p.labels, ClientDropped: p.dropped,
		Devices: []push.Device{dev}, Allocator: p.t.allocator}
	_ = store.Update(p.connID, p.connected, push.Cred{PID: p.pid, UID: 1000, GID: 1000}, msg)
}

func set(v float64) push.Optional { return push.Optional{Value: uint64(v), Set: true} }

// publish serves the current figures through the fake NVML.
func (n *Node) publish() {
	per := make([][]nvmltest.ProcSpec, n.cfg.GPUs)
	sum := make([]uint64, n.cfg.GPUs)
	for _, p := range n.procs {
		if p.alive {
			per[p.gpu] = append(per[p.gpu], nvmltest.ProcSpec{PID: p.pid, Used: p.used, Lists: nvmltest.Compute})
			sum[p.gpu] += p.used
		}
	}
	specs := make([]nvmltest.GPUSpec, n.cfg.GPUs)
	for i := range specs {
		slices.SortFunc(per[i], func(a, b nvmltest.ProcSpec) int { return int(a.PID) - int(b.PID) })
		specs[i] = n.gpuSpec(i, per[i], sum[i])
	}
	n.nv.Update(func([]nvmltest.GPUSpec) []nvmltest.GPUSpec { return specs })
}

func (n *Node) gpuSpec(i int, procs []nvmltest.ProcSpec, used uint64) nvmltest.GPUSpec {
	return nvmltest.GPUSpec{
		UUID: n.uuids[i], Name: "NVIDIA H200 (demo)", PCIBusID: fmt.Sprintf("%08X:%02X:00.0", i/14, 0x18+0x10*(i%14)),
		Total: n.cfg.GPUMemoryBytes, DriverReserved: uint64(driverReservedBytes * n.scale), Used: used,
		Procs: procs,
	}
}
